//! A linear layer's weight on the fastest matmul this CPU has for it: Q8_0, Q4_0, Q4_1, Q5_0,
//! Q5_1, Q2_K, Q3_K, Q4_K, Q5_K and Q6_K weights are repacked for hearth-kernels' AVX-512 VNNI
//! or AVX2 kernels where the CPU has one and the shape tiles (rows a multiple of 16, columns of
//! the format's block: 32 values, or 256 for the K-quants). Candle's own fast path needs rows that are
//! multiples of 256, which Qwen2.5-0.5B's 896-wide projections are not: prefill there ran at
//! about a sixth of the speed. Everything else stays on candle's `QMatMul`.

use candle_core::quantized::{GgmlDType, QMatMul};
use candle_core::{DType, Device, Module, Tensor};
use hearth_kernels::{
    Isa, PackError, PackedMatrix, PackedQ2_K, PackedQ3_K, PackedQ4_0, PackedQ4_1, PackedQ4_K,
    PackedQ5_0, PackedQ5_1, PackedQ5_K, PackedQ6_K, PackedQ8_0, WeightArena, fits_tiles,
};

use crate::error::{EngineBug, EngineError};
use crate::model::cpu_memory::with_slice;

pub(crate) enum Linear {
    Candle(QMatMul),
    /// Replaces the candle weight, for prefill and decode alike: the same quantized values,
    /// repacked at about the file's size (each format's module in hearth-kernels says how
    /// much more).
    Packed(Box<dyn PackedMatrix>),
}

/// Which matmul kernels a model's weights are packed for when it loads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kernels {
    /// The fastest this CPU runs: what the engine always uses.
    #[default]
    Fastest,
    /// One instruction set's kernels, where the CPU runs it (else candle's path): `hearth
    /// bench` measures with them what a CPU without the faster set gets, such as the AVX2
    /// kernels on an AVX-512 machine.
    Only(Isa),
    /// None: candle's own matmul for every weight.
    Candle,
}

impl Kernels {
    /// The instruction set to pack for, if any applies here.
    fn isa(self) -> Option<Isa> {
        match self {
            Self::Fastest => Isa::detect(),
            Self::Only(isa) => isa.available().then_some(isa),
            Self::Candle => None,
        }
    }
}

/// Packs GGUF bytes of one format holding a `rows` × `cols` matrix for an instruction set,
/// into an arena.
type Packer =
    fn(&WeightArena, Isa, &[u8], usize, usize) -> Result<Box<dyn PackedMatrix>, PackError>;

/// The [`Packer`] of one packed type.
macro_rules! packer_of {
    ($ty:ty) => {
        |arena, isa, data, rows, cols| Ok(Box::new(<$ty>::pack_in(arena, isa, data, rows, cols)?))
    };
}

/// The packer for weights of `dtype`, if hearth-kernels has a kernel for them.
fn packer(dtype: GgmlDType) -> Option<Packer> {
    Some(match dtype {
        GgmlDType::Q8_0 => packer_of!(PackedQ8_0),
        GgmlDType::Q4_0 => packer_of!(PackedQ4_0),
        GgmlDType::Q4_1 => packer_of!(PackedQ4_1),
        GgmlDType::Q5_0 => packer_of!(PackedQ5_0),
        GgmlDType::Q5_1 => packer_of!(PackedQ5_1),
        GgmlDType::Q2K => packer_of!(PackedQ2_K),
        GgmlDType::Q3K => packer_of!(PackedQ3_K),
        GgmlDType::Q4K => packer_of!(PackedQ4_K),
        GgmlDType::Q5K => packer_of!(PackedQ5_K),
        GgmlDType::Q6K => packer_of!(PackedQ6_K),
        _ => return None,
    })
}

/// Whether a `rows` × `cols` matrix of `dtype` on the CPU is packed for this CPU's fastest
/// kernels when it loads: hearth-kernels has the format, the CPU runs one of its instruction
/// sets, and the shape is whole tiles ([`fits_tiles`], the check packing makes).
pub(crate) fn packs_here(dtype: GgmlDType, rows: usize, cols: usize) -> bool {
    packer(dtype).is_some()
        && Kernels::Fastest.isa().is_some()
        && fits_tiles(rows, cols, dtype.block_size())
}

/// How a model's weights are packed as it loads: for which kernels, and into one arena, so
/// that its matrices lie together on huge pages (see [`WeightArena`]).
pub(crate) struct Packing {
    kernels: Kernels,
    arena: WeightArena,
}

impl Packing {
    pub fn new(kernels: Kernels) -> Self {
        Self {
            kernels,
            arena: WeightArena::new(),
        }
    }

    /// `weight` as a linear layer, packed when it is a Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 or K-quant
    /// (Q2_K to Q6_K) matrix on the CPU and the kernels asked for are ones this CPU runs.
    pub fn linear(&self, weight: QMatMul) -> Result<Linear, EngineError> {
        if let QMatMul::QTensor(t) = &weight
            && t.device().is_cpu()
            && let Some(pack) = packer(t.dtype())
            && let Some(isa) = self.kernels.isa()
        {
            let (rows, cols) = t.shape().dims2()?;
            match pack(&self.arena, isa, &t.data()?, rows, cols) {
                Ok(packed) => return Ok(Linear::Packed(packed)),
                Err(err) => tracing::debug!("{rows}x{cols} weight stays on candle: {err}"),
            }
        }
        Ok(Linear::Candle(weight))
    }
}

impl Linear {
    /// Rows `ids` of the weight as a `(ids.len(), cols)` f32 tensor: the embedding lookup of a
    /// table tied to this (packed) output head. `None` on candle's path, which keeps its own
    /// table.
    pub fn rows(&self, ids: &[u32], device: &Device) -> Result<Option<Tensor>, EngineError> {
        let Self::Packed(w) = self else {
            return Ok(None);
        };
        let (rows, cols) = (w.rows(), w.cols());
        let mut out = vec![0f32; ids.len() * cols];
        for (&id, row) in ids.iter().zip(out.chunks_exact_mut(cols)) {
            if id as usize >= rows {
                return Err(EngineError::TokenOutOfRange { id, vocab: rows });
            }
            w.dequantize_row(id as usize, row);
        }
        Ok(Some(Tensor::from_vec(out, (ids.len(), cols), device)?))
    }

    /// Which matmul serves this weight, for `hearth bench`: the format and the packed kernel's
    /// instruction set, or candle's path and the weight's type there.
    pub fn kernel(&self) -> String {
        match self {
            Self::Candle(QMatMul::QTensor(t)) => format!("candle {:?}", t.dtype()),
            Self::Candle(QMatMul::Tensor(t) | QMatMul::TensorF16(t)) => {
                format!("candle {:?}", t.dtype())
            }
            Self::Packed(w) => format!("{} {:?}", w.format(), w.isa()),
        }
    }

    pub fn is_packed(&self) -> bool {
        matches!(self, Self::Packed(_))
    }

    /// `x @ wᵀ` over the last dimension of `x`.
    pub fn forward(&self, x: &Tensor) -> Result<Tensor, EngineError> {
        let w = match self {
            Self::Candle(w) => return Ok(w.forward(x)?),
            Self::Packed(w) => w,
        };
        let (rows, cols) = (w.rows(), w.cols());
        let mut dims = x.dims().to_vec();
        if dims.pop() != Some(cols) {
            return Err(EngineBug::MatmulShape {
                input: x.dims().to_vec(),
                cols,
            }
            .into());
        }
        let x32 = x.to_dtype(DType::F32)?;
        let m = x32.elem_count() / cols;
        let len = m * rows;
        // Written whole by the matmul, so not zeroed first.
        let mut out = Vec::with_capacity(len);
        let unwritten = &mut out.spare_capacity_mut()[..len];
        // The pool this runs in (the engine's own) sets the threads. candle's
        // `get_num_threads` would read /proc/cpuinfo and sysfs on every call: a hundred reads
        // per decoded token, 5% of decode's CPU time.
        let threads = rayon::current_num_threads();
        // Read in place where the input is one run of memory, as every activation is here:
        // copying it out first cost a prompt chunk 5 MB per MLP down projection.
        if with_slice(&x32, |lhs: &[f32]| {
            w.matmul_uninit(lhs, m, unwritten, threads)
        })
        .is_none()
        {
            let lhs = x32.flatten_all()?.to_vec1::<f32>()?;
            w.matmul_uninit(&lhs, m, unwritten, threads);
        }
        // SAFETY: `matmul_uninit` wrote all `len` elements (`PackedMatrix`'s contract; it
        // panics rather than return with a size it does not match).
        unsafe { out.set_len(len) };
        dims.push(rows);
        Ok(Tensor::from_vec(out, dims, x.device())?.to_dtype(x.dtype())?)
    }
}

#[cfg(test)]
mod tests {
    use candle_core::quantized::{GgmlDType, QMatMul, QTensor};
    use candle_core::{Device, Module, Tensor};

    use super::{Isa, Kernels, Packing};
    use crate::error::{EngineBug, EngineError};

    fn quantized(dtype: GgmlDType, rows: usize, cols: usize) -> QTensor {
        let dev = Device::Cpu;
        let w = Tensor::randn(0f32, 1.0, (rows, cols), &dev).unwrap();
        QTensor::quantize(&w, dtype).unwrap()
    }

    /// Where the CPU packs Q8_0, Q4_0, Q4_1, Q5_0, Q5_1 and the K-quants, the packed layer
    /// answers as candle's does: the same embedding rows for a tied table (bit for bit: the
    /// same dequantization), and the same products up to rounding.
    #[test]
    fn a_packed_weight_agrees_with_candle_on_rows_and_products() {
        for (dtype, cols) in [
            (GgmlDType::Q8_0, 64),
            (GgmlDType::Q4_0, 64),
            (GgmlDType::Q4_1, 64),
            (GgmlDType::Q5_0, 64),
            (GgmlDType::Q5_1, 64),
            (GgmlDType::Q2K, 512),
            (GgmlDType::Q3K, 512),
            (GgmlDType::Q4K, 512),
            (GgmlDType::Q5K, 512),
            (GgmlDType::Q6K, 512),
        ] {
            packed_agrees_with_candle(dtype, cols);
        }
    }

    /// A K-quant matrix whose rows are not a multiple of 256 stays on candle's path.
    #[test]
    fn a_k_quant_weight_that_does_not_tile_stays_on_candle() {
        for dtype in [
            GgmlDType::Q2K,
            GgmlDType::Q3K,
            GgmlDType::Q4K,
            GgmlDType::Q5K,
            GgmlDType::Q6K,
        ] {
            // 20 rows: a multiple of candle's block count but not of the 16-row tile.
            let weight = QMatMul::from_qtensor(quantized(dtype, 20, 256)).unwrap();
            assert!(
                !Packing::new(Kernels::Fastest)
                    .linear(weight)
                    .unwrap()
                    .is_packed(),
                "{dtype:?}"
            );
        }
    }

    /// `packs_here` says of a weight what loading it does: packed, or left on candle's path
    /// (formats without a kernel, shapes that are not whole tiles, a CPU without the kernels).
    #[test]
    fn packs_here_foretells_the_packing() {
        for (dtype, rows, cols) in [
            (GgmlDType::Q8_0, 32, 64),
            (GgmlDType::Q5_0, 48, 96),
            (GgmlDType::Q4K, 16, 512),
            (GgmlDType::Q6K, 32, 256),
            // Rows that are not whole tiles, for a light format and a K-quant.
            (GgmlDType::Q8_0, 20, 64),
            (GgmlDType::Q4K, 20, 256),
            // No packed kernel for these.
            (GgmlDType::F32, 32, 64),
            (GgmlDType::F16, 32, 64),
            (GgmlDType::Q8_1, 32, 64),
        ] {
            let weight = QMatMul::from_qtensor(quantized(dtype, rows, cols)).unwrap();
            let packed = Packing::new(Kernels::Fastest)
                .linear(weight)
                .unwrap()
                .is_packed();
            assert_eq!(
                super::packs_here(dtype, rows, cols),
                packed,
                "{dtype:?} {rows}x{cols}"
            );
        }
    }

    /// `hearth bench --kernels` packs for the instruction set it names, where the CPU runs it,
    /// and `candle` packs nothing.
    #[test]
    fn the_kernels_asked_for_are_the_kernels_packed() {
        let weight = || QMatMul::from_qtensor(quantized(GgmlDType::Q8_0, 32, 64)).unwrap();
        assert!(
            !Packing::new(Kernels::Candle)
                .linear(weight())
                .unwrap()
                .is_packed()
        );
        for isa in Isa::ALL {
            let linear = Packing::new(Kernels::Only(isa)).linear(weight()).unwrap();
            match isa.available() {
                true => assert_eq!(linear.kernel(), format!("Q8_0 {isa:?}")),
                false => assert!(!linear.is_packed(), "{isa:?} is not on this CPU"),
            }
        }
    }

    fn max_diff(a: &Tensor, b: &Tensor) -> f32 {
        let diff = (a - b).unwrap().abs().unwrap().max_all().unwrap();
        diff.to_scalar::<f32>().unwrap()
    }

    fn packed_agrees_with_candle(dtype: GgmlDType, cols: usize) {
        let dev = Device::Cpu;
        let rows = 288;
        let candle = QMatMul::from_qtensor(quantized(dtype, rows, cols)).unwrap();
        let QMatMul::QTensor(t) = &candle else {
            unreachable!()
        };
        let packed = Packing::new(Kernels::Fastest)
            .linear(QMatMul::from_arc(t.clone()).unwrap())
            .unwrap();
        if !packed.is_packed() {
            eprintln!("this CPU has no packed kernel: candle serves the weight");
            assert!(packed.rows(&[0], &dev).unwrap().is_none());
            return;
        }
        let ids = [0u32, 5, 17, 287];
        let got = packed.rows(&ids, &dev).unwrap().unwrap();
        let want = candle
            .embedding(&Tensor::new(&ids[..], &dev).unwrap())
            .unwrap();
        let diff = (got - want).unwrap().abs().unwrap().max_all().unwrap();
        assert_eq!(diff.to_scalar::<f32>().unwrap(), 0.0);
        assert!(packed.rows(&[288], &dev).is_err(), "an id past the table");

        let x = Tensor::randn(0f32, 1.0, (1, 3, cols), &dev).unwrap();
        let got = packed.forward(&x).unwrap();
        let want = candle.forward(&x).unwrap();
        match dtype {
            // Candle quantizes the activations of K-quant products per 256 values (Q8_K), the
            // packed kernels per 32 as for Q8_0; and for Q4_1 and Q5_1 it rounds each activation
            // block's sum to f16 (Q8_1's `s`), where the packed kernels keep it exact. So these
            // are held to the exact product with the same weights: the packed layer's largest
            // error must stay within twice candle's (over 100 random runs of the K-quants it was
            // 0.5–0.6 of candle's as a rule, 1.2 at most).
            GgmlDType::Q4_1
            | GgmlDType::Q5_1
            | GgmlDType::Q2K
            | GgmlDType::Q3K
            | GgmlDType::Q4K
            | GgmlDType::Q5K
            | GgmlDType::Q6K => {
                let weight = t.dequantize(&dev).unwrap();
                let exact = x.broadcast_matmul(&weight.t().unwrap()).unwrap();
                let (ours, theirs) = (max_diff(&got, &exact), max_diff(&want, &exact));
                assert!(ours <= theirs * 2.0, "{dtype:?}: {ours} against {theirs}");
            }
            _ => {
                let scale = want.abs().unwrap().max_all().unwrap();
                let scale = scale.to_scalar::<f32>().unwrap();
                assert!(max_diff(&got, &want) <= scale * 1e-4, "{dtype:?}");
            }
        }

        // An input of the wrong width is the engine's bug, typed, not an invalid request.
        let wrong = Tensor::randn(0f32, 1.0, (1, 3, cols + 32), &dev).unwrap();
        assert!(matches!(
            packed.forward(&wrong),
            Err(EngineError::Bug(EngineBug::MatmulShape { ref input, cols: c }))
                if *input == [1, 3, cols + 32] && c == cols
        ));
    }
}
