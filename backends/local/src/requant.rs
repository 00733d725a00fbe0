//! Re-quantizing a GGUF to a format with fast CPU kernels in candle (Q8_0, Q4_0): the stock
//! Qwen2.5-Coder-0.5B file stores most weights as Q5_0, which candle runs without SIMD, about
//! 3x slower to decode (docs/inference.md §3.1). Where hearth's packed kernels serve the file,
//! the engine runs it as it is and makes no copy (`engine_file`).

use std::path::Path;

use candle_core::Device;
use candle_core::quantized::gguf_file::{self, Value};
use candle_core::quantized::{GgmlDType, QTensor};

use crate::error::EngineError;
use crate::model::GgufFile;

/// Writes `src` re-quantized to `dtype` at `dst` (through a temp file, renamed at the end).
/// Matrices (2-D `.weight` tensors whose rows fit the block size) are converted; norms,
/// biases and anything else are copied as they are.
pub fn requantize(src: &Path, dst: &Path, dtype: GgmlDType) -> Result<(), EngineError> {
    let ftype = match dtype {
        GgmlDType::Q8_0 => 7u32,
        GgmlDType::Q4_0 => 2,
        other => {
            return Err(EngineError::InvalidRequest(format!(
                "requantize to {other:?} is not offered; use Q8_0 or Q4_0"
            )));
        }
    };
    let mut file = GgufFile::open(src)?;
    let names: Vec<String> = {
        let mut n: Vec<String> = file.content.tensor_infos.keys().cloned().collect();
        n.sort();
        n
    };
    let mut tensors: Vec<(String, QTensor)> = Vec::with_capacity(names.len());
    for name in names {
        let t = file.tensor(&name)?;
        let convert = name.ends_with(".weight")
            && t.rank() == 2
            && t.shape().dims()[1] % dtype.block_size() == 0
            && t.dtype() != dtype;
        let t = if convert {
            QTensor::quantize(&t.dequantize(&Device::Cpu)?, dtype)?
        } else {
            t
        };
        tensors.push((name, t));
    }
    let mut metadata: Vec<(String, Value)> = file
        .content
        .metadata
        .iter()
        .filter(|(k, _)| k.as_str() != "general.file_type")
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    metadata.push(("general.file_type".into(), Value::U32(ftype)));
    let md: Vec<(&str, &Value)> = metadata.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let ts: Vec<(&str, &QTensor)> = tensors.iter().map(|(k, v)| (k.as_str(), v)).collect();
    let dir = dst.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    gguf_file::write(tmp.as_file_mut(), &md, &ts)?;
    tmp.persist(dst).map_err(|e| EngineError::Io(e.error))?;
    Ok(())
}

/// Makes `copy` a Q8_0 copy of `original`, unless one at least as new as the original is there
/// already. The engine makes this copy of its default model; tests make it of theirs.
pub fn q8_0_copy(original: &Path, copy: &Path) -> Result<(), EngineError> {
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified());
    match (modified(original), modified(copy)) {
        (Ok(src), Ok(dst)) if dst >= src => Ok(()),
        // The original is gone but its copy is not: the copy is what there is.
        (Err(_), Ok(_)) => Ok(()),
        _ => requantize(original, copy, GgmlDType::Q8_0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::tiny::{self, TinySpec};

    #[test]
    fn requantized_model_loads_and_agrees_on_the_argmax() {
        let dir = tempfile::tempdir().unwrap();
        let spec = TinySpec {
            weights: GgmlDType::F32,
            ..TinySpec::qwen2()
        };
        let src = tiny::write(&spec, dir.path(), "f32");
        let dst = dir.path().join("q8.gguf");
        requantize(&src, &dst, GgmlDType::Q8_0).unwrap();
        let load = |p: &Path| {
            GgufFile::open(p)
                .unwrap()
                .load_model(&Device::Cpu, &mut |_| Ok(()))
                .unwrap()
        };
        let (a, b) = (load(&src), load(&dst));
        assert_eq!(b.quantization(), "Q8_0");
        let tokens: Vec<u32> = (0..20).map(|i| i * 7 % 250).collect();
        let la = a
            .forward(&tokens, &mut a.new_cache())
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let lb = b
            .forward(&tokens, &mut b.new_cache())
            .unwrap()
            .to_vec1::<f32>()
            .unwrap();
        let diff = la
            .iter()
            .zip(&lb)
            .map(|(x, y)| (x - y).abs())
            .fold(0.0, f32::max);
        let scale = la.iter().map(|x| x.abs()).fold(0.0, f32::max);
        assert!(
            diff < 0.05 * scale,
            "Q8_0 drifted {diff} on logits up to {scale}"
        );
        assert_eq!(crate::sampler::argmax(&la), crate::sampler::argmax(&lb));
        assert!(requantize(&src, &dst, GgmlDType::Q5_1).is_err());
    }
}
