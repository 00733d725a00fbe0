//! Rotary position tables, always computed in f64 and stored in f32, whatever the model dtype
//! (candle 0.11.1's Qwen3 builds them in f16, which is wrong past position 2048).

use candle_core::{Device, Tensor};
use hearth_kernels::RopePairs;

use crate::error::EngineError;

/// cos/sin tables of shape `(max_positions, head_dim / 2)`.
pub struct Rope {
    cos: Tensor,
    sin: Tensor,
    interleaved: bool,
    max_positions: usize,
}

impl Rope {
    pub fn new(
        head_dim: usize,
        theta: f64,
        max_positions: usize,
        interleaved: bool,
        device: &Device,
    ) -> Result<Self, EngineError> {
        let half = head_dim / 2;
        // Both sizes come from the model file's header: a wrapped product would build tables
        // too short for `Tensor::from_vec`'s shape, and one too large for memory must be an
        // error the engine reports, not an abort.
        let values = max_positions
            .checked_mul(half)
            .ok_or_else(|| too_large(max_positions, head_dim))?;
        let mut cos = Vec::new();
        let mut sin = Vec::new();
        cos.try_reserve_exact(values)
            .and_then(|()| sin.try_reserve_exact(values))
            .map_err(|_| too_large(max_positions, head_dim))?;
        for pos in 0..max_positions {
            for i in 0..half {
                let inv_freq = 1.0 / theta.powf((2 * i) as f64 / head_dim as f64);
                let angle = pos as f64 * inv_freq;
                cos.push(angle.cos() as f32);
                sin.push(angle.sin() as f32);
            }
        }
        Ok(Self {
            cos: Tensor::from_vec(cos, (max_positions, half), device)?,
            sin: Tensor::from_vec(sin, (max_positions, half), device)?,
            interleaved,
            max_positions,
        })
    }

    /// Rotates `x` of shape `(1, heads, L, head_dim)` for positions `offset..offset+L`.
    pub fn apply(&self, x: &Tensor, offset: usize) -> Result<Tensor, EngineError> {
        let (cos, sin) = self.tables(offset, x.dim(2)?)?;
        let x = x.contiguous()?;
        let out = if self.interleaved {
            candle_nn::rotary_emb::rope_i(&x, &cos, &sin)?
        } else {
            candle_nn::rotary_emb::rope(&x, &cos, &sin)?
        };
        Ok(out)
    }

    /// The cos and sin tables' rows for positions `offset..offset + len`, `(len, head_dim / 2)`.
    pub(crate) fn tables(
        &self,
        offset: usize,
        len: usize,
    ) -> Result<(Tensor, Tensor), EngineError> {
        if offset + len > self.max_positions {
            return Err(EngineError::ContextOverflow {
                needed: offset + len,
                limit: self.max_positions,
            });
        }
        Ok((
            self.cos.narrow(0, offset, len)?,
            self.sin.narrow(0, offset, len)?,
        ))
    }

    /// How a head's dimensions pair up for the rotation.
    pub(crate) fn pairs(&self) -> RopePairs {
        if self.interleaved {
            RopePairs::Adjacent
        } else {
            RopePairs::Halves
        }
    }
}

/// Tables of `positions · head_dim / 2` values that cannot be allocated.
fn too_large(positions: usize, head_dim: usize) -> EngineError {
    EngineError::OutOfMemory(format!(
        "RoPE tables for {positions} positions of head dim {head_dim}"
    ))
}

#[cfg(test)]
mod tests {
    use candle_core::Device;

    use super::Rope;
    use crate::error::EngineError;

    /// Sizes from a crafted header whose product overflows are an error, not a wrapped
    /// allocation or a capacity panic.
    #[test]
    fn tables_too_large_to_size_are_an_error() {
        let result = Rope::new(4, 10_000.0, usize::MAX / 2 + 1, false, &Device::Cpu);
        assert!(matches!(result, Err(EngineError::OutOfMemory(_))));
    }
}
