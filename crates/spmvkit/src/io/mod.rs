//! Matrix Market I/O (placeholder).
