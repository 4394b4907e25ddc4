//! Where training runs, and how many CPU threads it may use.

use candle_core::Device;

use super::{NnError, Result};

/// A run setting: which device trains the networks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceChoice {
    #[default]
    Cpu,
    /// An NVIDIA GPU by ordinal (needs a build with `--features cuda`).
    Cuda(usize),
    /// Apple's GPU (needs a build with `--features metal`, macOS only).
    Metal,
}

impl DeviceChoice {
    /// Opens the device, or says why it cannot be used.
    pub fn open(self) -> Result<Device> {
        match self {
            DeviceChoice::Cpu => Ok(Device::Cpu),
            DeviceChoice::Cuda(i) => {
                if !cfg!(feature = "cuda") {
                    return Err(NnError::Device(
                        format!("cuda:{i}"),
                        "this build has no CUDA support; rebuild with `cargo build --release --features cuda` (needs the CUDA toolkit)".into(),
                    ));
                }
                Device::new_cuda(i).map_err(|e| NnError::Device(format!("cuda:{i}"), e.to_string()))
            }
            DeviceChoice::Metal => {
                if !cfg!(feature = "metal") {
                    return Err(NnError::Device(
                        "metal".into(),
                        "this build has no Metal support; rebuild on macOS with `--features metal`"
                            .into(),
                    ));
                }
                Device::new_metal(0).map_err(|e| NnError::Device("metal".into(), e.to_string()))
            }
        }
    }

    /// Parses `cpu`, `cuda`, `cuda:N` or `metal`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "cpu" => Ok(Self::Cpu),
            "cuda" => Ok(Self::Cuda(0)),
            "metal" => Ok(Self::Metal),
            _ => match s.strip_prefix("cuda:").and_then(|n| n.parse().ok()) {
                Some(i) => Ok(Self::Cuda(i)),
                None => Err(NnError::Invalid(format!(
                    "unknown device '{s}'; use cpu, cuda, cuda:N or metal"
                ))),
            },
        }
    }
}

/// Runs `f` on a rayon pool of `threads` threads, so training leaves cores for the
/// window (candle's matrix products run in the current rayon pool).
pub fn with_cpu_threads<T: Send>(threads: usize, f: impl FnOnce() -> T + Send) -> Result<T> {
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads.max(1))
        .build()
        .map_err(|e| NnError::Invalid(format!("cannot start {threads} training threads: {e}")))?;
    Ok(pool.install(f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unavailable_devices_say_why() {
        assert!(DeviceChoice::Cpu.open().is_ok());
        if !cfg!(feature = "cuda") {
            let e = DeviceChoice::Cuda(0).open().unwrap_err().to_string();
            assert!(e.contains("--features cuda"), "{e}");
        }
        assert_eq!(
            DeviceChoice::parse("cuda:1").unwrap(),
            DeviceChoice::Cuda(1)
        );
        assert!(DeviceChoice::parse("tpu").is_err());
    }
}
