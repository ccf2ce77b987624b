use super::*;
use crate::matrix::Csr;
use crate::methods::testmats::{check_layout, params, random_rows, suite};
use crate::methods::{GenericMethod, Params};

crate::methods::testmats::room_tests! {
    method: CsrOverlap,
    kernel: KERNEL,
    oracle: [
        [],
        // the suite's 120k-nnz row makes 469 chunks of 256: several per lane of the combine
        ["long_chunk=256"],
        // every forced vector size, with small batches
        ["vector=1", "max_batch_size=37", "threads=64"],
        ["vector=2", "max_batch_size=37", "threads=64"],
        ["vector=4", "max_batch_size=37", "threads=64"],
        ["vector=8", "max_batch_size=37", "threads=64"],
        ["vector=16", "max_batch_size=37", "threads=64"],
        ["vector=32", "max_batch_size=37", "threads=64"],
    ],
    corpus: [
        [],
        ["max_batch_size=100", "threads=256"],
        ["max_batch_size=100", "long_chunk=256"],
    ],
    repeatable: [],
    rejects: [
        ["vector=3"],
        ["vector=64"],
        ["max_batch_size=0"],
        ["threads=48"],
        ["ctas_per_sm=0"],
        ["switch_points=1,2"],
        ["switch_points=a,b,c,d,e"],
        ["long_chunk=255"],
        ["long_chunk=x"],
    ],
}

/// `csr-full-overlap`'s shared tests (the room's kernel is checked above).
mod full {
    use super::*;

    crate::methods::testmats::room_tests! {
        method: CsrFullOverlap,
        oracle: [
            [],
            ["long_chunk=1000", "max_batch_size=64", "stream_num=2"],
            ["max_batch_size=64", "stream_num=3", "switch_points=2,3,5,9,20"],
            ["stream_num=1", "ctas_per_sm=1"],
        ],
        corpus: [["max_batch_size=100"]],
        rejects: [["stream_num=0"], ["stream_num=17"]],
    }
}

fn row_ptr_of(lengths: &[u32]) -> Vec<Idx> {
    let mut rp = vec![0];
    for &l in lengths {
        rp.push(rp.last().unwrap() + l);
    }
    rp
}

/// A CSR matrix with the given row lengths (columns 0, 1, ...; values 1 + position / 7).
fn with_lengths(lengths: &[u32]) -> Csr<f64> {
    let rp = row_ptr_of(lengths);
    let ncols = lengths.iter().copied().max().unwrap_or(0).max(1) as usize;
    let cols: Vec<Idx> = lengths.iter().flat_map(|&l| 0..l).collect();
    let vals = (0..cols.len()).map(|k| 1.0 + k as f64 / 7.0).collect();
    Csr::new(lengths.len(), ncols, rp, cols, vals).unwrap()
}

const FIG5_LENGTHS: [u32; 13] = [32, 15, 16, 11, 8, 38, 256, 25, 16, 130, 2, 22, 33];

#[test]
fn fig5_dynamic_batch_partition() {
    // Figure 5: max_batch_size 64, 13 rows.
    let p = partition(&row_ptr_of(&FIG5_LENGTHS), 64, 64);
    assert_eq!(p.batches, vec![(0, 3), (3, 6), (7, 9), (10, 13)]);
    assert_eq!(p.long_rows, vec![6, 9]);
    // The same through the method's prepare.
    let a = with_lengths(&FIG5_LENGTHS);
    let cfg = Config::parse::<f64>(
        NAME,
        PARAMS,
        &params(&["max_batch_size=64", "switch_points=17,34,64,122,216"]),
    )
    .unwrap();
    let l = OverlapLayout::build(&a, cfg, None);
    assert_eq!(l.partition(), &p);
    // Table 2 on the batches' means 21, 19, 20, 19: two lanes each.
    assert_eq!(l.vlog, vec![1, 1, 1, 1]);
    check_layout("fig5", &a, &l);
    // Our H200 points: one lane below a mean of 32.
    let cfg = Config::parse::<f64>(NAME, PARAMS, &params(&["max_batch_size=64"])).unwrap();
    assert_eq!(cfg.switch_points, MEASURED_SWITCH_POINTS);
    let l = OverlapLayout::build(&a, cfg, None);
    assert_eq!(l.vlog, vec![0, 0, 0, 0]);
}

#[test]
fn partition_edge_cases() {
    // No rows; only long rows; a row of exactly max_batch_size; empty rows capped by row count.
    assert_eq!(partition(&[0], 8, 8), Partition::default());
    let p = partition(&row_ptr_of(&[9, 10]), 8, 8);
    assert!(p.batches.is_empty());
    assert_eq!(p.long_rows, vec![0, 1]);
    let p = partition(&row_ptr_of(&[8, 8, 1, 7]), 8, 8);
    assert_eq!(p.batches, vec![(0, 1), (1, 2), (2, 4)]);
    let p = partition(&row_ptr_of(&[0; 20]), 8, 8);
    assert_eq!(p.batches, vec![(0, 8), (8, 16), (16, 20)]);
    let p = partition(&row_ptr_of(&[0, 0, 3, 0, 9, 0, 0]), 4, 4);
    assert_eq!(p.batches, vec![(0, 4), (5, 7)]);
    assert_eq!(p.long_rows, vec![4]);
}

#[test]
fn partition_is_the_greedy_stack_of_alg3() {
    // Alg. 3 literally (a stack that refuses a push past max_batch_size), plus our row cap,
    // against the binary-search walk, on random row lengths.
    fn alg3(lengths: &[u32], mb: u32) -> Partition {
        let mut p = Partition::default();
        let (mut start, mut rows, mut sum) = (0usize, 0u32, 0u32);
        for (i, &len) in lengths.iter().enumerate() {
            if len > mb {
                p.long_rows.push(i as Idx);
                if rows > 0 {
                    p.batches.push((start as Idx, i as Idx));
                }
                rows = 0;
                sum = 0;
                continue;
            }
            if rows > 0 && (sum + len > mb || rows == mb) {
                p.batches.push((start as Idx, i as Idx));
                rows = 0;
                sum = 0;
            }
            if rows == 0 {
                start = i;
            }
            rows += 1;
            sum += len;
        }
        if rows > 0 {
            p.batches.push((start as Idx, lengths.len() as Idx));
        }
        p
    }
    let mut g = crate::methods::testmats::Lcg::new(11);
    for case in 0..200 {
        let mb = 1 + g.below(40);
        let n = g.below(300) as usize;
        let lengths: Vec<u32> = (0..n)
            .map(|_| match g.below(10) {
                0 => 0,
                1 => mb + g.below(5),
                _ => g.below(mb / 2 + 2),
            })
            .collect();
        assert_eq!(
            partition(&row_ptr_of(&lengths), mb, mb),
            alg3(&lengths, mb),
            "case {case}: mb {mb}, lengths {lengths:?}"
        );
    }
}

#[test]
fn table2_vector_sizes() {
    let sp = PAPER_SWITCH_POINTS;
    assert_eq!(vector_log2(0, 5, &sp), 0);
    assert_eq!(vector_log2(16 * 3 + 2, 3, &sp), 0); // mean 16.67 -> [0, 17) -> 1 lane
    assert_eq!(vector_log2(17 * 3, 3, &sp), 1);
    assert_eq!(vector_log2(33, 1, &sp), 1);
    assert_eq!(vector_log2(34, 1, &sp), 2);
    assert_eq!(vector_log2(64, 1, &sp), 3);
    assert_eq!(vector_log2(121, 1, &sp), 3);
    assert_eq!(vector_log2(122, 1, &sp), 4);
    assert_eq!(vector_log2(215, 1, &sp), 4);
    assert_eq!(vector_log2(216, 1, &sp), 5);
    assert_eq!(vector_log2(100_000, 1, &sp), 5);
    assert_eq!(parse_switch_points("17,34,64,122,216"), Ok(sp));
    let ours = MEASURED_SWITCH_POINTS;
    assert_eq!(vector_log2(31, 1, &ours), 0);
    assert_eq!(vector_log2(32, 1, &ours), 1);
    assert_eq!(vector_log2(127, 1, &ours), 2);
    assert_eq!(vector_log2(256, 1, &ours), 3);
    assert_eq!(vector_log2(257, 1, &ours), 5);
    assert!(parse_switch_points("1,2,3,4").is_err());
    assert!(parse_switch_points("5,4,6,7,8").is_err());
}

#[test]
fn fig7_big_batches() {
    // Nine one-row batches ending at nnz 200, 450, ..., 2000; big_batch_size 1000: batch 4
    // (950..1150) is cut by the boundary and goes to the second big batch, as in Fig. 7.
    let lengths = [200, 250, 250, 250, 200, 250, 200, 200, 200];
    let rp = row_ptr_of(&lengths);
    let p = partition(&rp, 250, 250);
    assert_eq!(p.batches.len(), 9);
    let big = big_batches(&rp, &p.batches, 2);
    assert_eq!(
        big,
        vec![
            BigBatch {
                start_nnz: 0,
                end_nnz: 1000,
                start_batch: 0,
                end_batch: 4
            },
            BigBatch {
                start_nnz: 1000,
                end_nnz: 2000,
                start_batch: 4,
                end_batch: 9
            },
        ]
    );
    // Three streams: 667 per big batch.
    let big = big_batches(&rp, &p.batches, 3);
    let ranges: Vec<_> = big.iter().map(|b| (b.start_batch, b.end_batch)).collect();
    assert_eq!(ranges, vec![(0, 2), (2, 5), (5, 9)]);
}

#[test]
fn big_batches_keep_every_batch() {
    // Leading empty rows (Alg. 7 would drop their batch), no nonzeros at all, more streams
    // than nonzeros.
    let rp = row_ptr_of(&[0, 0, 0, 5, 5]);
    let p = partition(&rp, 4, 4);
    let big = big_batches(&rp, &p.batches, 2);
    assert_eq!(big[0].start_batch, 0);
    assert_eq!(big.last().unwrap().end_batch, p.batches.len());
    let rp = row_ptr_of(&[0; 10]);
    let p = partition(&rp, 4, 4);
    let big = big_batches(&rp, &p.batches, 2);
    assert_eq!(big.len(), 1);
    assert_eq!((big[0].start_batch, big[0].end_batch), (0, 3));
    let rp = row_ptr_of(&[1, 0, 1]);
    let p = partition(&rp, 4, 4);
    let big = big_batches(&rp, &p.batches, 16);
    assert_eq!(big.len(), 2);
    for w in big.windows(2) {
        assert_eq!(w[0].end_batch, w[1].start_batch);
        assert_eq!(w[0].end_nnz, w[1].start_nnz);
    }
}

#[test]
fn long_row_tasks() {
    // Rows 1 (700 nnz) and 3 (300 nnz) are long for max_batch_size 256.
    let rp = row_ptr_of(&[5, 700, 10, 300]);
    let p = partition(&rp, 256, 256);
    assert_eq!(p.long_rows, vec![1, 3]);
    let (t, f, c) = long_tasks(&rp, &p.long_rows, 0);
    assert_eq!(t, vec![0, 5, 705, 0, 1, 715, 1015, 0]);
    assert_eq!((f, c), (vec![0, 1], vec![1, 1]));
    let (t, f, c) = long_tasks(&rp, &p.long_rows, 256);
    assert_eq!(
        t,
        vec![0, 5, 261, 0, 0, 261, 517, 1, 0, 517, 705, 2, 1, 715, 971, 0, 1, 971, 1015, 1]
    );
    assert_eq!((f, c), (vec![0, 3], vec![3, 2]));
}

#[test]
fn full_equals_partial_bitwise() {
    // The big-batch split changes which launch computes a batch, never how.
    for (_, a) in suite() {
        let p = CsrOverlap
            .prepare(&a, &params(&["max_batch_size=50"]))
            .unwrap();
        let f = CsrFullOverlap
            .prepare(&a, &params(&["max_batch_size=50", "stream_num=3"]))
            .unwrap();
        let (x, y0) = crate::methods::testmats::vectors::<f64>(a.nrows(), a.ncols(), 5);
        let (mut y1, mut y2) = (y0.clone(), y0);
        p.run_cpu(0.5, &x, 1.5, &mut y1).unwrap();
        f.run_cpu(0.5, &x, 1.5, &mut y2).unwrap();
        assert!(y1.iter().zip(&y2).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

#[test]
fn long_rows_and_vectors_reported() {
    let a = random_rows(300, 3000, 21, |g, r| {
        if r % 50 == 0 {
            2000
        } else {
            g.below(40) as usize
        }
    });
    let l = CsrOverlap.prepare(&a, &Params::new()).unwrap();
    let notes = l.notes();
    assert!(notes.contains(&("long rows".to_string(), "6".to_string())));
    check_layout("long rows", &a, l.as_ref());
    let c = CsrOverlap
        .prepare(&a, &params(&["long_chunk=512"]))
        .unwrap();
    // Rows of ~1460 distinct entries (2000 draws from 3000 columns): 3 chunks of 512 each.
    let tasks: usize = c
        .notes()
        .iter()
        .find(|(k, _)| k == "long-row CTA tasks")
        .map(|(_, v)| v.parse().unwrap())
        .unwrap();
    assert!((12..=24).contains(&tasks), "{tasks} tasks");
    check_layout("long rows in chunks", &a, c.as_ref());
    let stages = l.prep_stages();
    assert_eq!(stages.len(), 2);
    let f = CsrFullOverlap.prepare(&a, &Params::new()).unwrap();
    assert!(f.notes().iter().any(|(k, _)| k == "timed call includes"));
}

#[test]
fn shared_memory_sizes() {
    // S = 2·max_batch·(val + col) plus at most 16 bytes of slack per buffer.
    assert_eq!(smem_bytes::<f32>(1024), 2 * (1028 * 4 + 1028 * 4));
    assert_eq!(smem_bytes::<f64>(1024), 2 * (1026 * 8 + 1028 * 4));
    assert_eq!(smem_bytes::<f64>(64), 2 * (66 * 8 + 68 * 4));
    let a = Csr::<f64>::identity(4).unwrap();
    assert!(CsrOverlap
        .prepare(&a, &params(&["max_batch_size=2000"]))
        .is_ok());
    assert!(CsrOverlap
        .prepare(&a, &params(&["max_batch_size=2100"]))
        .is_err());
    let a32: Csr<f32> = a.cast();
    assert!(CsrOverlap
        .prepare(&a32, &params(&["max_batch_size=2100"]))
        .is_ok());
}
