//! Crafted headers: the checks alone on hand-made tensor infos, then whole files from
//! [`tiny`] with one header field rewritten, loaded the way the engine loads them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::quantized::gguf_file::{self, Content, TensorInfo, Value, VersionedMagic};
use candle_core::quantized::{GgmlDType, QTensor};
use candle_core::{Device, Shape, Tensor};

use super::{GgufLayoutError, check_tensor, expect_shape};
use crate::error::EngineError;
use crate::model::GgufFile;
use crate::model::tiny::{self, TinySpec};

fn info(dtype: GgmlDType, dims: &[usize], offset: u64) -> TensorInfo {
    TensorInfo {
        ggml_dtype: dtype,
        shape: Shape::from(dims.to_vec()),
        offset,
    }
}

#[test]
fn a_well_formed_tensor_gives_its_byte_size() {
    let t = info(GgmlDType::Q8_0, &[16, 64], 32);
    assert_eq!(
        check_tensor("w", &t, 64, 64 + 32 + 16 * 2 * 34),
        Ok(16 * 2 * 34)
    );
}

/// Dimensions near `usize::MAX`, whose products wrap in a release build.
#[test]
fn element_counts_that_overflow_are_refused() {
    for dims in [
        vec![usize::MAX, 2],
        vec![1 << 62, 4],
        vec![1 << 32, 1 << 32, 1],
    ] {
        assert_eq!(
            check_tensor("w", &info(GgmlDType::F32, &dims, 0), 0, u64::MAX),
            Err(GgufLayoutError::ElementsOverflow {
                tensor: "w".into(),
                dims
            })
        );
    }
}

#[test]
fn counts_that_are_not_whole_blocks_are_refused() {
    let t = info(GgmlDType::Q8_0, &[16, 33], 0);
    assert_eq!(
        check_tensor("w", &t, 0, u64::MAX),
        Err(GgufLayoutError::PartialBlock {
            tensor: "w".into(),
            elements: 16 * 33,
            block: 32
        })
    );
}

/// A byte size past `usize`, and offsets whose sum with the data start overflows `u64`.
#[test]
fn extents_that_overflow_are_refused() {
    let cases = [
        (info(GgmlDType::F32, &[1 << 62], 0), 0),
        (info(GgmlDType::F32, &[8], u64::MAX), 64),
        (info(GgmlDType::F32, &[8], u64::MAX - 16), 0),
    ];
    for (t, data_offset) in cases {
        assert!(
            matches!(
                check_tensor("w", &t, data_offset, u64::MAX),
                Err(GgufLayoutError::ExtentOverflow { .. })
            ),
            "{t:?}"
        );
    }
}

#[test]
fn data_past_the_end_of_the_file_is_refused() {
    let cases = [
        // Starts past the end.
        info(GgmlDType::F32, &[8], 1000),
        // Starts inside, runs past the end by one byte.
        info(GgmlDType::F32, &[8], 33),
        // Larger than any file, without overflowing.
        info(GgmlDType::F32, &[1 << 61], 0),
    ];
    for t in cases {
        let err = check_tensor("blk.0.w", &t, 64, 64 + 64).unwrap_err();
        assert!(matches!(err, GgufLayoutError::PastEnd { .. }), "{err}");
        assert!(err.to_string().contains("`blk.0.w`"), "{err}");
    }
    assert_eq!(
        check_tensor("w", &info(GgmlDType::F32, &[8], 32), 64, 128),
        Ok(32)
    );
}

fn content(tensors: &[(&str, TensorInfo)]) -> Content {
    let mut tensor_infos = HashMap::new();
    for (name, t) in tensors {
        tensor_infos.insert(
            name.to_string(),
            info(t.ggml_dtype, t.shape.dims(), t.offset),
        );
    }
    Content {
        magic: VersionedMagic::GgufV3,
        metadata: HashMap::new(),
        tensor_infos,
        tensor_data_offset: 0,
    }
}

#[test]
fn shapes_are_held_to_the_config() {
    let c = content(&[
        ("embd", info(GgmlDType::Q8_0, &[288, 64], 0)),
        ("empty", info(GgmlDType::F32, &[0, 64], 0)),
    ]);
    assert_eq!(expect_shape(&c, "embd", &[288, 64]), Ok(()));
    assert_eq!(
        expect_shape(&c, "embd", &[288, 128]),
        Err(GgufLayoutError::Shape {
            tensor: "embd".into(),
            got: vec![288, 64],
            want: vec![288, 128]
        })
    );
    assert_eq!(
        expect_shape(&c, "empty", &[0, 64]),
        Err(GgufLayoutError::Empty {
            tensor: "empty".into(),
            dims: vec![0, 64]
        })
    );
    assert_eq!(
        expect_shape(&c, "gone", &[1]),
        Err(GgufLayoutError::Missing {
            tensor: "gone".into()
        })
    );
}

/// Where tensor `name`'s header entry starts (just past its name), in a GGUF v3 file.
fn entry(bytes: &[u8], name: &str) -> usize {
    let mut key = (name.len() as u64).to_le_bytes().to_vec();
    key.extend_from_slice(name.as_bytes());
    let at = bytes
        .windows(key.len())
        .position(|w| w == key.as_slice())
        .unwrap_or_else(|| panic!("{name} is not in the header"));
    at + key.len()
}

/// Rewrites tensor `name`'s dimensions (GGUF order: innermost first) to `dims`, of the same
/// count as before.
fn patch_dims(path: &Path, name: &str, dims: &[u64]) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = entry(&bytes, name);
    let n = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    assert_eq!(n, dims.len(), "{name} has {n} dimensions");
    for (i, d) in dims.iter().enumerate() {
        let start = at + 4 + 8 * i;
        bytes[start..start + 8].copy_from_slice(&d.to_le_bytes());
    }
    std::fs::write(path, bytes).unwrap();
}

/// Rewrites tensor `name`'s data offset.
fn patch_offset(path: &Path, name: &str, offset: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    let at = entry(&bytes, name);
    let n = u32::from_le_bytes(bytes[at..at + 4].try_into().unwrap()) as usize;
    let start = at + 4 + 8 * n + 4;
    bytes[start..start + 8].copy_from_slice(&offset.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
}

fn tiny_file(spec: &TinySpec) -> (PathBuf, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let path = tiny::write(spec, dir.path(), "crafted");
    (path, dir)
}

/// The load error's message, whether opening or loading refused the file.
fn load_error(path: &Path) -> String {
    let loaded = GgufFile::open(path).and_then(|mut f| f.load_model(&Device::Cpu, &mut |_| Ok(())));
    match loaded {
        Err(EngineError::Load { message, .. }) => message,
        Err(other) => panic!("not a load error: {other}"),
        Ok(_) => panic!("the crafted file loaded"),
    }
}

#[test]
fn the_untouched_tiny_file_loads() {
    let (path, _dir) = tiny_file(&TinySpec::qwen2());
    let mut file = GgufFile::open(&path).unwrap();
    assert!(file.load_model(&Device::Cpu, &mut |_| Ok(())).is_ok());
}

#[test]
fn a_file_whose_dimensions_overflow_is_a_load_error() {
    let (path, _dir) = tiny_file(&TinySpec::qwen2());
    patch_dims(&path, "token_embd.weight", &[1 << 62, 4]);
    let message = load_error(&path);
    assert!(message.contains("`token_embd.weight`"), "{message}");
    assert!(message.contains("overflows"), "{message}");
}

#[test]
fn a_tensor_past_the_end_of_the_file_is_a_load_error() {
    let (path, _dir) = tiny_file(&TinySpec::qwen2());
    patch_offset(&path, "blk.0.attn_k.weight", 1 << 40);
    let message = load_error(&path);
    assert!(message.contains("`blk.0.attn_k.weight`"), "{message}");
    assert!(message.contains("past the end"), "{message}");
}

/// Transposed K projection: the same bytes, a shape the config does not allow.
#[test]
fn a_weight_whose_shape_disagrees_with_the_config_is_a_load_error() {
    let spec = TinySpec::qwen2();
    let (path, _dir) = tiny_file(&spec);
    let kv_dim = (spec.kv_heads * spec.head_dim) as u64;
    patch_dims(&path, "blk.0.attn_k.weight", &[kv_dim, spec.hidden as u64]);
    let message = load_error(&path);
    assert!(message.contains("`blk.0.attn_k.weight`"), "{message}");
    assert!(message.contains("config"), "{message}");
}

#[test]
fn a_zero_dimension_is_a_load_error() {
    let (path, _dir) = tiny_file(&TinySpec::qwen2());
    patch_dims(&path, "blk.1.ffn_norm.weight", &[0]);
    let message = load_error(&path);
    assert!(message.contains("`blk.1.ffn_norm.weight`"), "{message}");
    assert!(message.contains("empty"), "{message}");
}

/// candle's reader divides by `general.alignment`: a crafted 0 must not crash the caller.
#[test]
fn a_zero_alignment_is_a_load_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("aligned.gguf");
    let t = QTensor::quantize(
        &Tensor::zeros(32, candle_core::DType::F32, &Device::Cpu).unwrap(),
        GgmlDType::F32,
    )
    .unwrap();
    let zero = Value::U32(0);
    let mut file = std::fs::File::create(&path).unwrap();
    gguf_file::write(&mut file, &[("general.alignment", &zero)], &[("t", &t)]).unwrap();
    drop(file);
    assert!(load_error(&path).contains("malformed header"));
}

/// A context length far past any model's would size RoPE tables of tens of GiB.
#[test]
fn a_context_past_the_limit_is_refused_before_anything_is_sized() {
    let spec = TinySpec {
        context: 1 << 30,
        ..TinySpec::qwen2()
    };
    let (path, _dir) = tiny_file(&spec);
    let loaded = GgufFile::open(&path)
        .unwrap()
        .load_model(&Device::Cpu, &mut |_| Ok(()));
    match loaded {
        Err(EngineError::InvalidRequest(message)) => {
            assert!(message.contains("context length"), "{message}")
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("a 2^30-token context loaded"),
    }
}
