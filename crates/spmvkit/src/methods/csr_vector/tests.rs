use super::*;

crate::methods::testmats::room_tests! {
    method: CsrVector,
    kernel: KERNEL,
    oracle: [[]],
    corpus: [[]],
    gpu: [[]],
    repeatable: [],
    rejects: [["threads=0"], ["threads=48"], ["threads=2048"], ["threads=x"]],
}

#[test]
fn worked_example() {
    crate::methods::testmats::check_small_worked_example(&CsrVector);
}
