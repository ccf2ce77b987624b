//! cuSPARSE generic SpMV baseline (issue #3): RAII wrapper; filled in next.
