use super::{BLOCK, QuantizedRows, SUPER, Scheme, quantize_blocks_scalar};

/// Quantizes `lhs` (whole blocks; whole super-blocks for Q8_K) by the scalar path alone.
fn scalar(lhs: &[f32], scheme: Scheme) -> QuantizedRows {
    let blocks = lhs.len() / BLOCK;
    let mut rows = QuantizedRows {
        blocks,
        words: vec![[0; BLOCK / 4]; blocks],
        scales: vec![0.0; blocks],
        offsets: vec![0; blocks],
        pair_sums: vec![[0; 2]; blocks],
    };
    quantize_blocks_scalar(lhs, rows.entries(), scheme);
    rows
}

fn assert_same(lhs: &[f32], scheme: Scheme) {
    let fast = QuantizedRows::quantize(lhs, 1, lhs.len(), 1, scheme);
    let slow = scalar(lhs, scheme);
    for b in 0..slow.blocks {
        let block = &lhs[b * BLOCK..][..BLOCK];
        assert_eq!(fast.words[b], slow.words[b], "words of {block:?}");
        assert_eq!(
            fast.scales[b].to_bits(),
            slow.scales[b].to_bits(),
            "{block:?}"
        );
        assert_eq!(fast.offsets[b], slow.offsets[b], "offset of {block:?}");
        assert_eq!(fast.pair_sums[b], slow.pair_sums[b], "pairs of {block:?}");
    }
}

/// Blocks of every kind the engine meets and some it should not: random magnitudes, values
/// that land exactly on a half (127 · k / 254 of the largest), all equal, all zero, one
/// nonzero value, and non-finite values.
#[test]
fn the_vector_path_quantizes_as_the_scalar_one_to_the_bit() {
    #[cfg(target_arch = "x86_64")]
    let vector = is_x86_feature_detected!("avx2");
    #[cfg(not(target_arch = "x86_64"))]
    let vector = false;
    if !vector {
        eprintln!("no AVX2 on this CPU: the scalar path can only be compared with itself");
    }
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut lhs = Vec::new();
    for round in 0..400 {
        let magnitude = 10f32.powi(round % 12 - 6);
        lhs.extend(
            (0..BLOCK)
                .map(|_| (next() % 20001) as f32 / 10000.0 - 1.0)
                .map(|v| v * magnitude),
        );
    }
    // Halves: with the largest value 127, each value `k + 0.5` quantizes on a tie.
    lhs.extend((0..BLOCK).map(|i| {
        if i == 0 {
            127.0
        } else {
            (i as f32 - 16.0) + 0.5
        }
    }));
    lhs.extend((0..BLOCK).map(|i| if i == 0 { -127.0 } else { -(i as f32) - 0.5 }));
    lhs.extend([0.75f32; BLOCK]);
    lhs.extend([0.0f32; BLOCK]);
    lhs.extend((0..BLOCK).map(|i| if i == 9 { -3.0 } else { 0.0 }));
    for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
        lhs.extend((0..BLOCK).map(|i| if i % 5 == 0 { bad } else { i as f32 }));
    }
    // A span with NaN alone among zeros, and one whose largest magnitude comes twice, with
    // both signs.
    lhs.extend((0..SUPER).map(|i| if i == 77 { f32::NAN } else { 0.0 }));
    lhs.extend((0..SUPER).map(|i| match i {
        40 => 9.0,
        200 => -9.0,
        i => (i as f32 - 128.0) / 16.0,
    }));
    lhs.resize(lhs.len().next_multiple_of(SUPER), 0.25);
    assert_same(&lhs, Scheme::Q8_0);
    assert_same(&lhs, Scheme::Q8_K);
}

/// ggml's Q8_K: one scale per 256 values, the first value of largest magnitude quantized to
/// −127 (so the scale takes the sign that makes it so), halves rounded to even, and every
/// block of the span carrying the span's scale.
#[test]
fn q8_k_quantizes_a_span_as_ggml_does() {
    let values = |first: f32| -> Vec<f32> {
        (0..SUPER)
            .map(|i| match i {
                3 => first,
                250 => -first,
                // With the largest magnitude 127, the scale is ±1 and these fall on halves.
                100 => 2.5,
                101 => 3.5,
                102 => -2.5,
                i => (i % 7) as f32,
            })
            .collect()
    };
    let value = |rows: &QuantizedRows, i: usize| {
        (rows.words[i / BLOCK][i % BLOCK / 4] >> (8 * (i % 4))) as i8
    };
    for lhs in [values(-127.0), values(127.0)] {
        for rows in [
            QuantizedRows::quantize(&lhs, 1, SUPER, 1, Scheme::Q8_K),
            scalar(&lhs, Scheme::Q8_K),
        ] {
            let sign = -lhs[3].signum();
            assert_eq!(value(&rows, 3), -127);
            assert_eq!(value(&rows, 250), 127);
            assert!(rows.scales.iter().all(|&s| s == sign), "{:?}", rows.scales);
            let halves = [100, 101, 102].map(|i| value(&rows, i));
            let want = if sign > 0.0 { [2, 4, -2] } else { [-2, -4, 2] };
            assert_eq!(halves, want);
        }
    }
    let zeros = QuantizedRows::quantize(&[0.0; SUPER], 1, SUPER, 1, Scheme::Q8_K);
    assert!(zeros.scales.iter().all(|&s| s == 0.0));
    assert!(zeros.words.iter().all(|w| *w == [0; BLOCK / 4]));
}

/// Extreme sums: every value at +127 or −127 after quantizing, so the pair sums reach ±1016.
#[test]
fn extreme_blocks_keep_their_pair_sums_and_offsets() {
    let mut lhs = vec![1.0f32; BLOCK];
    lhs.extend([-1.0f32; BLOCK]);
    lhs.extend((0..BLOCK).map(|i| if i % 2 == 0 { 1.0 } else { -1.0 }));
    assert_same(&lhs, Scheme::Q8_0);
    let rows = scalar(&lhs, Scheme::Q8_0);
    assert_eq!(rows.offsets[0], -128 * 127 * 32);
    assert_eq!(
        rows.pair_sums[1][0],
        i32::from_le_bytes([0x08, 0xfc, 0x08, 0xfc])
    );
}
