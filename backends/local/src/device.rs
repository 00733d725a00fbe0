//! The one place that knows whether hearth was built with CUDA. Everything else asks this
//! module for a [`Device`] and never says `cfg(feature = "cuda")` itself.

use candle_core::Device;

use crate::error::EngineError;

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum DeviceChoice {
    /// CUDA device 0 when built with `cuda` and a GPU is present, else the CPU.
    #[default]
    Auto,
    /// The CPU, always available.
    Cpu,
    /// CUDA device `n`; an error when not compiled in or not present.
    Cuda(usize),
}

/// True when this build has CUDA support and a CUDA device is visible.
pub fn cuda_is_available() -> bool {
    #[cfg(feature = "cuda")]
    {
        candle_core::utils::cuda_is_available()
    }
    #[cfg(not(feature = "cuda"))]
    {
        false
    }
}

/// Opens the device `choice` names.
pub fn open(choice: DeviceChoice) -> Result<Device, EngineError> {
    match choice {
        DeviceChoice::Cpu => Ok(Device::Cpu),
        DeviceChoice::Auto if cuda_is_available() => Ok(Device::new_cuda(0)?),
        DeviceChoice::Auto => Ok(Device::Cpu),
        DeviceChoice::Cuda(n) => open_cuda(n),
    }
}

/// Whether `choice` opens the CPU, without opening anything: `Auto` does where this build has
/// no CUDA or no GPU is visible.
pub fn opens_cpu(choice: DeviceChoice) -> bool {
    match choice {
        DeviceChoice::Cpu => true,
        DeviceChoice::Auto => !cuda_is_available(),
        DeviceChoice::Cuda(_) => false,
    }
}

#[cfg(feature = "cuda")]
fn open_cuda(n: usize) -> Result<Device, EngineError> {
    Ok(Device::new_cuda(n)?)
}

#[cfg(not(feature = "cuda"))]
fn open_cuda(_n: usize) -> Result<Device, EngineError> {
    Err(EngineError::NotCompiledWith("cuda"))
}

/// The default prefill chunk for a device: 256 on CPU (prefill speed is flat above it and
/// memory grows), 1024 on a GPU.
pub fn default_prefill_chunk(device: &Device) -> usize {
    if device.is_cpu() { 256 } else { 1024 }
}

/// Short human name of a device choice, for a device this process does not open.
pub fn describe_choice(choice: DeviceChoice) -> String {
    match choice {
        DeviceChoice::Auto => "auto".into(),
        DeviceChoice::Cpu => "cpu".into(),
        DeviceChoice::Cuda(n) => format!("cuda:{n}"),
    }
}

/// Short human name of the device for reports.
pub fn describe(device: &Device) -> String {
    match device {
        Device::Cpu => format!("cpu ({} threads)", candle_core::utils::get_num_threads()),
        other => format!("{:?}", other.location()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_always_opens_and_cuda_needs_the_feature() {
        assert!(open(DeviceChoice::Cpu).is_ok_and(|d| d.is_cpu()));
        if !cfg!(feature = "cuda") {
            assert!(!cuda_is_available());
            assert!(matches!(
                open(DeviceChoice::Cuda(0)),
                Err(EngineError::NotCompiledWith("cuda"))
            ));
            assert!(open(DeviceChoice::Auto).is_ok_and(|d| d.is_cpu()));
        }
    }

    /// `opens_cpu` says what `open` would give, without opening a GPU.
    #[test]
    fn opens_cpu_agrees_with_open() {
        for choice in [DeviceChoice::Cpu, DeviceChoice::Auto, DeviceChoice::Cuda(0)] {
            let cpu = matches!(open(choice), Ok(d) if d.is_cpu());
            assert_eq!(opens_cpu(choice), cpu, "{choice:?}");
        }
    }
}
