use super::encode::ValueCodes;
use super::*;
use crate::matrix::Coo;
use crate::matrix::Csr;
use crate::methods::testmats::{
    check_gpu_against_mirror, check_layout, check_method, check_method_on_corpus, gpu_case,
    gpu_test_lock, Lcg,
};
use crate::methods::{GenericMethod, Params};

fn params(items: &[&str]) -> Params {
    Params::parse(items.iter().copied()).unwrap()
}

fn packed<T: Scalar>(a: &Csr<T>, p: &[&str]) -> PackedLayout<T> {
    let cfg = encode::Config::from_params(&params(p), a).unwrap();
    encode::encode(a, &cfg).unwrap()
}

/// `nrows` × `ncols`, rows of 1..=`maxlen` entries within `band` of the diagonal, values drawn
/// from `distinct` values.
fn banded(nrows: usize, ncols: usize, band: usize, maxlen: usize, distinct: usize) -> Csr<f64> {
    let mut g = Lcg::new(nrows as u64 * 31 + distinct as u64);
    let mut coo = Coo::new(nrows, ncols).unwrap();
    for r in 0..nrows {
        let n = 1 + g.below(maxlen as u32) as usize;
        for _ in 0..n {
            let lo = r.saturating_sub(band);
            let hi = (r + band).min(ncols - 1);
            let c = lo + g.below((hi - lo + 1) as u32) as usize;
            let v = 1.0 + g.below(distinct as u32) as f64 / 8.0;
            coo.push(r, c, v).unwrap();
        }
    }
    // duplicates are summed on conversion: values beyond the chosen set; replace them
    let a = coo.to_csr();
    let vals: Vec<f64> = (0..a.nnz())
        .map(|k| 1.0 + (k * 7919 % distinct) as f64 / 8.0)
        .collect();
    Csr::with_pattern(a.pattern().clone(), vals).unwrap()
}

#[test]
fn mirror_matches_the_oracle_on_the_suite_in_every_mode() {
    for p in [
        &[][..],
        &["sort=on"],
        &["sort=off"],
        &["long=8"],
        &["values=raw"],
        &["sort=on", "window=32", "long=16"],
        &["sort=auto"],
        &["prefetch=off"],
    ] {
        check_method(&CsrPacked, &params(p));
    }
    check_method_on_corpus(&CsrPacked, &Params::new());
}

#[test]
fn value_codes_follow_the_distinct_count() {
    for (distinct, want) in [
        (1, ValueCodes::Const),
        (2, ValueCodes::Bits(1)),
        (3, ValueCodes::Bits(2)),
        (4, ValueCodes::Bits(2)),
        (5, ValueCodes::Bits(4)),
        (16, ValueCodes::Bits(4)),
        (17, ValueCodes::Bits(8)),
        (256, ValueCodes::Bits(8)),
        (257, ValueCodes::Bits(16)),
        (65536, ValueCodes::Bits(16)),
        (65537, ValueCodes::Raw),
    ] {
        let a = banded(40_000, 40_000, 100, 12, distinct);
        let l = packed(&a, &[]);
        assert_eq!(l.vcodes, want, "{distinct} distinct");
        check_layout(&format!("{distinct} distinct"), &a, &l);
        let a32 = a.cast::<f32>();
        check_layout(&format!("{distinct} distinct"), &a32, &packed(&a32, &[]));
    }
    let a = banded(40_000, 40_000, 100, 12, 65537);
    let e = encode::Config::from_params(&params(&["values=dict"]), &a)
        .and_then(|c| encode::encode(&a, &c).map(|_| ()))
        .unwrap_err();
    assert!(e.to_string().contains("65536"), "{e}");
}

#[test]
fn each_slice_takes_the_narrowest_width_and_outliers_leave() {
    // within ±100 of the diagonal: 8-bit codes everywhere
    let a = banded(4096, 4096, 100, 20, 3);
    let l = packed(&a, &[]);
    assert_eq!(l.facts.widths, [l.nslices(), 0, 0]);
    // ±20000: 16-bit
    let a = banded(4096, 60_000, 20_000, 20, 3);
    let l = packed(&a, &[]);
    assert_eq!(
        l.facts.widths[0] + l.facts.widths[2],
        0,
        "{:?}",
        l.facts.widths
    );
    check_layout("16-bit", &a, &l);
    // one column 99000 away in row 5, rows of up to 200 entries: widening the slice to 32 bits
    // would cost more than sending the row to the block-per-row path, so it leaves, and its
    // slice stays 8-bit (with short rows the slice widens instead)
    let b = banded(4096, 100_000, 100, 200, 3);
    let mut coo = b.to_coo();
    coo.push(5, 99_000, 2.0).unwrap();
    let a = coo.to_csr();
    let l = packed(&a, &["sort=off"]);
    assert_eq!(l.facts.n_outliers, 1);
    assert_eq!(l.long_rows, vec![5]);
    assert_eq!(l.facts.widths, [l.nslices(), 0, 0]);
    check_layout("outlier", &a, &l);
    check_layout("outlier sorted", &a, &packed(&a, &[]));
    let mut coo = banded(4096, 100_000, 100, 20, 3).to_coo();
    coo.push(5, 99_000, 2.0).unwrap();
    let short = packed(&coo.to_csr(), &[]);
    assert_eq!(short.facts.n_outliers, 0);
    assert_eq!(short.facts.widths[2], 1, "{:?}", short.facts.widths);
    check_layout(
        "outlier f32",
        &a.cast::<f32>(),
        &packed(&a.cast::<f32>(), &[]),
    );
}

#[test]
fn sorting_pays_for_its_row_map_on_uneven_rows_only() {
    // a stencil: every row alike, no sorting
    let a = crate::gen::generate_f64("poisson3d:24").unwrap();
    let l = packed(&a, &["sort=auto"]);
    assert!(!l.facts.sorted && l.rows.is_none());
    // rows of 1..=60 entries: sorting saves padding
    let a = banded(20_000, 20_000, 1000, 60, 5);
    let auto = packed(&a, &["sort=auto"]);
    let off = packed(&a, &["sort=off"]);
    assert!(auto.facts.sorted);
    assert!(auto.footprint_bytes() < off.footprint_bytes());
    check_layout("sorted", &a, &auto);
}

#[test]
fn a_stencil_packs_to_under_a_quarter_of_its_csr_bytes() {
    let a = crate::gen::generate_f64("poisson3d:32").unwrap();
    let l = packed(&a, &[]);
    let csr = a.bytes();
    let per_nnz = l.footprint_bytes() as f64 / a.nnz() as f64;
    // 7 entries: 16 bytes of 16-bit codes per row, 1 byte of 1-bit value codes, 1 length byte
    assert_eq!(l.vcodes, ValueCodes::Bits(1));
    assert!(per_nnz < 2.7, "{per_nnz:.2} bytes per nonzero");
    assert!(
        l.footprint_bytes() * 4 < csr,
        "{} vs CSR {csr}",
        l.footprint_bytes()
    );
    let notes = Layout::notes(&l);
    assert!(
        notes.iter().any(|(k, _)| k == "bytes per nonzero"),
        "{notes:?}"
    );
}

#[test]
fn mirror_decodes_what_the_encoder_wrote() {
    // decode every slice row back to its columns and values and compare with the CSR
    let a = banded(3000, 70_000, 35_000, 40, 300);
    for p in [&[][..], &["sort=on"], &["values=raw"], &["long=8"]] {
        let l = packed(&a, p);
        let mut seen = vec![false; a.nrows()];
        for s in 0..l.nslices() {
            for (lane, row, len) in l.slice_rows(s) {
                seen[row] = true;
                // a one-hot x reads back the first and the last value at their columns
                let (cols, vals) = a.row(row);
                assert_eq!(cols.len(), len, "row {row}");
                if lane % 8 != 0 || cols.is_empty() {
                    continue;
                }
                for k in [0, cols.len() - 1] {
                    let mut x = vec![0.0; a.ncols()];
                    x[cols[k] as usize] = 1.0;
                    let mut y = vec![0.0; a.nrows()];
                    cpu::run(&l, 1.0, &x, 0.0, &mut y);
                    assert_eq!(y[row], vals[k], "row {row} column {} ({p:?})", cols[k]);
                }
            }
        }
        for &r in &l.long_rows {
            seen[r as usize] = true;
        }
        assert!(
            seen.iter().all(|&b| b),
            "{p:?}: a row is in no slice and not long"
        );
    }
}

/// The kernel loads x for all 8 slots of a group, present or not (its loads are then unpredicated
/// and issued together): walking every slot's code, padding included, as the kernel does must
/// stay inside x. A padding code is 0, so a slot past the row's end re-reads its last column.
#[test]
fn every_slot_of_a_group_gathers_inside_x() {
    let mut cases = vec![
        banded(3000, 70_000, 35_000, 40, 300),
        banded(700, 900, 600, 200, 3),
    ];
    cases.extend(crate::gen::corpus::edge_cases().into_iter().map(|(_, a)| a));
    for a in &cases {
        for p in [&[][..], &["sort=on"], &["long=8"]] {
            let l = packed(a, p);
            for s in 0..l.nslices() {
                let w = u32::from(l.col_w[s]);
                let words = &l.cols[l.col_off[s] as usize * 4..];
                for (lane, row, len) in l.slice_rows(s) {
                    let mut prev = (row as u32).wrapping_sub(encode::bias(w));
                    for g in 0..len.div_ceil(GROUP) {
                        for j in 0..GROUP {
                            prev = prev.wrapping_add(cpu::col_code(words, w, g, lane, j));
                            assert!(
                                (prev as usize) < a.ncols(),
                                "slice {s} lane {lane} (row {row}, {len} entries) slot {} \
                                 gathers column {prev} of {} ({p:?})",
                                g * GROUP + j,
                                a.ncols()
                            );
                        }
                    }
                }
            }
        }
    }
}

/// The layout the kernel's vector loads assume: unit q (16 bytes) of every lane side by side,
/// so load q of a warp reads one contiguous run.
#[test]
fn blocks_are_interleaved_in_sixteen_byte_units() {
    // 32-bit column codes: 8 words per lane, units of 4 words
    assert_eq!(interleaved(8, 4, 0, 3), 3);
    assert_eq!(interleaved(8, 4, 1, 0), 4);
    assert_eq!(interleaved(8, 4, 0, 4), 128);
    assert_eq!(interleaved(8, 4, 5, 6), 128 + 5 * 4 + 2);
    // 8- and 16-bit codes: blocks of 2 and 4 words, whole and side by side
    assert_eq!(interleaved(2, 4, 7, 1), 15);
    assert_eq!(interleaved(4, 4, 7, 3), 31);
    // raw f64: units of 2 values; raw f32: units of 4
    assert_eq!(interleaved(8, 8, 3, 5), 2 * 64 + 3 * 2 + 1);
    assert_eq!(interleaved(8, 4, 3, 5), 128 + 3 * 4 + 1);
    // every slot of a group is taken once
    for (items, bytes) in [(2, 4), (4, 4), (8, 4), (8, 8)] {
        let mut seen = vec![false; WARP * items];
        for l in 0..WARP {
            for j in 0..items {
                let i = interleaved(items, bytes, l, j);
                assert!(!seen[i], "{items} items of {bytes} bytes: slot {i} twice");
                seen[i] = true;
            }
        }
    }
    // and the encoder writes there: one row of 8 raw f64 values in lane 0 of slice 0
    let mut coo = Coo::new(1, 1 << 20).unwrap();
    for k in 0..8usize {
        coo.push(0, k * 70_000, 1.0 + k as f64).unwrap();
    }
    let l = packed(&coo.to_csr(), &["values=raw"]);
    assert_eq!(l.col_w[0], 32);
    let words = &l.cols[4 * l.col_off[0] as usize..];
    let codes: Vec<u32> = (0..8).map(|j| words[interleaved(8, 4, 0, j)]).collect();
    assert_eq!(codes[1..], [70_000; 7]);
    assert_eq!(words[4], 0, "lane 1's first column unit follows lane 0's");
    let raw: Vec<f64> = (0..8).map(|j| l.raw[interleaved(8, 8, 0, j)]).collect();
    assert_eq!(raw, (0..8).map(|k| 1.0 + k as f64).collect::<Vec<_>>());
    assert_eq!(l.raw[2], 0.0, "lane 1's first value unit follows lane 0's");
}

#[test]
fn bad_parameters_are_refused_with_the_key() {
    let a = banded(100, 100, 10, 5, 2);
    for (p, key) in [
        ("long=4", "long"),
        ("long=300", "long"),
        ("long=x", "long"),
        ("sort=maybe", "sort"),
        ("window=100", "window"),
        ("values=lossy", "values"),
        ("prefetch=maybe", "prefetch"),
    ] {
        let e = CsrPacked.prepare(&a, &params(&[p])).err().unwrap();
        assert!(e.to_string().contains(key), "{p}: {e}");
    }
}

#[test]
fn update_values_reencodes_in_place_or_prepares_again_with_a_note() {
    use crate::methods::{Backend, Plan, PlanOptions, ValueUpdate};
    let a = crate::gen::generate_f64("poisson2d:40").unwrap();
    let opts = PlanOptions {
        backend: Some(Backend::Cpu),
        ..PlanOptions::default()
    };
    let mut plan = Plan::new("csr-packed", &a, &opts).unwrap();
    let x: Vec<f64> = (0..a.ncols()).map(|i| (i % 7) as f64 - 3.0).collect();
    let fresh = |vals: &[f64]| {
        let b = Csr::with_pattern(a.pattern().clone(), vals.to_vec()).unwrap();
        let mut y = vec![0.0; a.nrows()];
        Plan::new("csr-packed", &b, &opts)
            .unwrap()
            .apply(1.0, &x, 0.0, &mut y)
            .unwrap();
        y
    };
    // twice the values: still two distinct, re-encoded with 1-bit codes
    let doubled: Vec<f64> = a.vals().iter().map(|v| 2.0 * v).collect();
    assert_eq!(
        plan.update_values(&doubled).unwrap(),
        ValueUpdate::Reencoded
    );
    assert!(plan.value_update_note().is_none());
    let mut y = vec![0.0; a.nrows()];
    plan.apply(1.0, &x, 0.0, &mut y).unwrap();
    assert_eq!(y, fresh(&doubled));
    // a thousand distinct values do not fit 1-bit codes: prepared again, and said why
    let many: Vec<f64> = (0..a.nnz()).map(|k| (k % 1000) as f64 + 0.5).collect();
    assert_eq!(plan.update_values(&many).unwrap(), ValueUpdate::Reprepared);
    let note = plan.value_update_note().unwrap();
    assert!(note.contains("1-bit codes"), "{note}");
    plan.apply(1.0, &x, 0.0, &mut y).unwrap();
    assert_eq!(y, fresh(&many));
}

#[test]
fn kernel_entry_points_take_the_pushed_arguments() {
    crate::methods::testmats::check_kernel_args(&KERNEL);
    // every value mode's entry, with and without the prefetch, is declared
    for v in ValueCodes::ALL {
        for prefetch in [true, false] {
            assert!(KERNEL.entry(v.entry(prefetch)).is_some());
        }
    }
}

#[test]
fn gpu_matches_mirror_bit_for_bit() {
    check_gpu_against_mirror(&CsrPacked, &Params::new());
    check_gpu_against_mirror(&CsrPacked, &params(&["sort=on", "long=16"]));
    check_gpu_against_mirror(&CsrPacked, &params(&["prefetch=off", "long=16"]));
}

#[test]
fn gpu_matches_mirror_in_every_value_mode_and_width() {
    let _guard = gpu_test_lock();
    let Some(gpu) = crate::testing::gpu_or_skip("gpu_matches_mirror_in_every_value_mode_and_width")
    else {
        return;
    };
    let mut cases: Vec<(String, Csr<f64>)> = [1, 2, 3, 5, 17, 257, 65537]
        .into_iter()
        .map(|d| (format!("{d} distinct"), banded(20_000, 20_000, 100, 20, d)))
        .collect();
    cases.push(("16-bit".into(), banded(4096, 60_000, 20_000, 20, 3)));
    cases.push(("32-bit".into(), banded(4096, 9_000_000, 4_000_000, 20, 3)));
    cases.push((
        "poisson3d:24".into(),
        crate::gen::generate_f64("poisson3d:24").unwrap(),
    ));
    for (name, a) in &cases {
        for p in [
            Params::new(),
            params(&["sort=on"]),
            params(&["prefetch=off"]),
        ] {
            gpu_case(&CsrPacked, &p, &gpu, name, a);
            gpu_case(&CsrPacked, &p, &gpu, name, &a.cast::<f32>());
        }
    }
}

/// With values stored in f16 or bf16 (`storage=`, docs/precision.md) and more than 256 distinct
/// values, the 16-bit codes are the values' own bits and the dictionary every pattern widened
/// (the kernel widens the code itself); the mirror matches the oracle of the stored values,
/// before and after a re-encoding of new values; GPU against the mirror, bit for bit.
#[test]
fn sixteen_bit_storage_codes_are_the_values_bits() {
    use crate::scalar::ValueStorage;
    let a: Csr<f32> = banded(3000, 3000, 40, 60, 5000).cast();
    for storage in [ValueStorage::F16, ValueStorage::Bf16] {
        let (r, _) = crate::matrix::round_values(&a, storage).unwrap();
        let key = format!("storage={storage}");
        let mut l = packed(&r, &[key.as_str()]);
        assert_eq!(l.vcodes, ValueCodes::Bits(16), "{storage}");
        assert_eq!(l.dict.len(), 1 << 16, "{storage}");
        for b in [0x3c00u16, 0x3f80, 0x8001] {
            assert_eq!(l.dict[b as usize], storage.widen16(b).unwrap(), "{storage} {b:#x}");
        }
        check_layout(&format!("csr-packed {storage}"), &r, &l);
        let halves: Vec<f32> = r.vals().iter().map(|v| storage.round(v * 0.5)).collect();
        let h = Csr::with_pattern(r.pattern().clone(), halves).unwrap();
        encode::reencode_values(&mut l, r.pattern(), h.vals()).unwrap();
        assert_eq!(l.dict.len(), 1 << 16, "{storage} after re-encoding");
        check_layout(&format!("csr-packed {storage} re-encoded"), &h, &l);
        let p = params(&[key.as_str()]);
        let _guard = gpu_test_lock();
        if let Some(gpu) = crate::testing::gpu_or_skip("sixteen_bit_storage_codes_are_the_values_bits") {
            gpu_case(&CsrPacked, &p, &gpu, &format!("banded {storage}"), &r);
        }
    }
}
