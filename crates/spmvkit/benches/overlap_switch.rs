//! Switch-point re-measurement of CSR-Partial-Overlap (paper §5.2, Table 2; issue #5) as a
//! bench: the code lives in tests/gpu_overlap_switch.rs (an `#[ignore]`d test there, so that the
//! packed test executables can run it on the GPU machine), included here.

#[allow(dead_code)]
#[path = "../tests/gpu_overlap_switch.rs"]
mod switch;

fn main() {
    switch::run();
}
