//! Classifies tensor errors into [`FaultClass`]es by walking candle's error chain.
//!
//! CUDA errors are asynchronous and surface at whatever call comes next, so every error from
//! any engine step goes through here. The classifier works on the formatted chain (the CUDA
//! driver's error names, `CUDA_ERROR_*`), which is what a build without the `cuda` feature can
//! see too; that keeps it testable with synthetic errors on CPU.

/// CUDA driver errors after which the context is unusable and the process must be restarted
/// (CUDA driver documentation; docs/inference.md §4.2).
const STICKY_CUDA: &[&str] = &[
    "CUDA_ERROR_ILLEGAL_ADDRESS",
    "CUDA_ERROR_LAUNCH_TIMEOUT",
    "CUDA_ERROR_ASSERT",
    "CUDA_ERROR_HARDWARE_STACK_ERROR",
    "CUDA_ERROR_ILLEGAL_INSTRUCTION",
    "CUDA_ERROR_MISALIGNED_ADDRESS",
    "CUDA_ERROR_INVALID_ADDRESS_SPACE",
    "CUDA_ERROR_INVALID_PC",
    "CUDA_ERROR_LAUNCH_FAILED",
    "CUDA_ERROR_ECC_UNCORRECTABLE",
    "CUDA_ERROR_NVLINK_UNCORRECTABLE",
    "CUDA_ERROR_CONTEXT_IS_DESTROYED",
    "CUDA_ERROR_NOT_INITIALIZED",
    "CUDA_ERROR_DEINITIALIZED",
    "CUDA_ERROR_UNKNOWN",
    "CUDA_ERROR_NO_DEVICE",
    "CUDA_ERROR_INVALID_DEVICE",
];

/// CUDA errors that mean "out of memory": recoverable by freeing caches.
const OOM_CUDA: &[&str] = &["CUDA_ERROR_OUT_OF_MEMORY", "CUBLAS_STATUS_ALLOC_FAILED"];

/// CUDA errors that are usage bugs but leave the context usable.
const BENIGN_CUDA: &[&str] = &[
    "CUDA_ERROR_INVALID_VALUE",
    "CUDA_ERROR_INVALID_HANDLE",
    "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
];

/// How a device fault should be handled once classified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceFaultKind {
    /// A sticky CUDA code: the CUDA context cannot recover in-process.
    StickyCuda,
    /// A device error this classifier does not know: treated as a fault, reload in-process.
    Unknown,
}

/// Classifies a candle error by its chain.
pub fn classify_tensor_error(err: &candle_core::Error) -> FaultClass {
    classify_text(&chain_text(err), is_cuda_variant(err))
}

/// The kind of a device fault, for the reload decision. `None` when not a device fault.
pub fn device_fault_kind(err: &candle_core::Error) -> Option<DeviceFaultKind> {
    let text = chain_text(err);
    match classify_text(&text, is_cuda_variant(err)) {
        FaultClass::Device if STICKY_CUDA.iter().any(|c| text.contains(c)) => {
            Some(DeviceFaultKind::StickyCuda)
        }
        FaultClass::Device => Some(DeviceFaultKind::Unknown),
        _ => None,
    }
}

fn classify_text(text: &str, cuda_variant: bool) -> FaultClass {
    if OOM_CUDA.iter().any(|c| text.contains(c)) {
        return FaultClass::Resource;
    }
    if STICKY_CUDA.iter().any(|c| text.contains(c)) {
        return FaultClass::Device;
    }
    if BENIGN_CUDA.iter().any(|c| text.contains(c)) {
        return FaultClass::Request;
    }
    // Any other CUDA error is unknown, and unknown means fault: staying up on a poisoned
    // context serves nothing but errors (docs/inference.md §4.1).
    if cuda_variant || text.contains("CUDA_ERROR_") || text.contains("CUBLAS_STATUS_") {
        return FaultClass::Device;
    }
    FaultClass::Request
}

/// True when the innermost error (under context and backtrace wrappers) is candle's CUDA
/// variant.
fn is_cuda_variant(err: &candle_core::Error) -> bool {
    use candle_core::Error as E;
    match err {
        E::Cuda(_) => true,
        E::Context { inner, .. } | E::WithBacktrace { inner, .. } | E::WithPath { inner, .. } => {
            is_cuda_variant(inner)
        }
        _ => false,
    }
}

/// The whole chain as text: Display plus Debug, since some CUDA errors only name their code in
/// the Debug form.
fn chain_text(err: &candle_core::Error) -> String {
    let mut text = format!("{err} | {err:?}");
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        text.push_str(" | ");
        text.push_str(&inner.to_string());
        source = inner.source();
    }
    text
}

/// The three fault classes of the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FaultClass {
    /// Validation, overflow, bad ids, cancel, CPU-side panics and ordinary tensor errors: the
    /// model stays healthy.
    Request,
    /// Out of memory: the sequence's cache is reset; a smaller retry may succeed.
    Resource,
    /// Sticky or unknown device errors: the model is poisoned and reloaded.
    Device,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct FakeDriverError(&'static str);
    impl std::fmt::Display for FakeDriverError {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "DriverError({}, \"synthetic\")", self.0)
        }
    }
    impl std::error::Error for FakeDriverError {}

    fn cuda(code: &'static str) -> candle_core::Error {
        candle_core::Error::Cuda(Box::new(FakeDriverError(code)))
    }

    #[test]
    fn sticky_codes_are_device_faults() {
        for code in STICKY_CUDA {
            let err = cuda(code);
            assert_eq!(classify_tensor_error(&err), FaultClass::Device, "{code}");
            assert_eq!(device_fault_kind(&err), Some(DeviceFaultKind::StickyCuda));
        }
    }

    #[test]
    fn oom_is_a_resource_error_even_under_context() {
        let err = cuda("CUDA_ERROR_OUT_OF_MEMORY").context("allocating the kv cache");
        assert_eq!(classify_tensor_error(&err), FaultClass::Resource);
        assert_eq!(device_fault_kind(&err), None);
    }

    #[test]
    fn unknown_cuda_errors_are_device_faults() {
        let err = cuda("CUDA_ERROR_SOMETHING_NEW");
        assert_eq!(classify_tensor_error(&err), FaultClass::Device);
        assert_eq!(device_fault_kind(&err), Some(DeviceFaultKind::Unknown));
        let wrapped = candle_core::Error::Cuda(Box::new(std::io::Error::other("opaque")));
        assert_eq!(classify_tensor_error(&wrapped), FaultClass::Device);
    }

    #[test]
    fn benign_cuda_codes_and_cpu_errors_are_request_errors() {
        assert_eq!(
            classify_tensor_error(&cuda("CUDA_ERROR_INVALID_VALUE")),
            FaultClass::Request
        );
        let shape = candle_core::Error::Msg("shape mismatch in matmul".into());
        assert_eq!(classify_tensor_error(&shape), FaultClass::Request);
    }

    #[test]
    fn string_only_cuda_codes_are_found_in_messages() {
        // A CPU build sees CUDA errors only as text (e.g. from a worker's report).
        let err = candle_core::Error::Msg("kernel: CUDA_ERROR_LAUNCH_FAILED".into());
        assert_eq!(classify_tensor_error(&err), FaultClass::Device);
    }
}
