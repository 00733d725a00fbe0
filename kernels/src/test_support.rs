//! Helpers the packed kernels' tests share: a reproducible generator, random activations, and
//! dense f64 math to hold the quantized products to.

/// A small deterministic generator, so failures reproduce.
pub(crate) struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as u32
    }

    pub fn float(&mut self) -> f32 {
        self.next() as f32 / (1u64 << 31) as f32 * 2.0 - 1.0
    }
}

pub(crate) fn random_rows(rng: &mut Lcg, m: usize, cols: usize) -> Vec<f32> {
    (0..m * cols)
        .map(|i| rng.float() * if i % 7 == 0 { 8.0 } else { 1.0 })
        .collect()
}

/// Row-major `m × rows` of `lhs · wᵀ` in f64, the activations as given (unquantized).
pub(crate) fn dense_matmul(lhs: &[f32], w: &[f32], m: usize, rows: usize, cols: usize) -> Vec<f32> {
    let mut out = vec![0f32; m * rows];
    for i in 0..m {
        for r in 0..rows {
            let dot: f64 = (0..cols)
                .map(|c| f64::from(lhs[i * cols + c]) * f64::from(w[r * cols + c]))
                .sum();
            out[i * rows + r] = dot as f32;
        }
    }
    out
}

/// The largest `|got − want|` over the largest `|want|`; infinite where either is NaN, as an
/// output a kernel never wrote is (the tests fill `got` with NaN first), since `f32::max`
/// would pass over it.
pub(crate) fn max_relative_error(got: &[f32], want: &[f32]) -> f32 {
    let scale = want.iter().fold(0f32, |a, x| a.max(x.abs())).max(1e-6);
    got.iter().zip(want).fold(0f32, |a, (g, w)| {
        let error = (g - w).abs() / scale;
        if error.is_nan() {
            f32::INFINITY
        } else {
            a.max(error)
        }
    })
}

/// A rayon pool of its own, for tests that need a given number of threads.
pub(crate) fn pool(threads: usize) -> rayon::ThreadPool {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .unwrap()
}
