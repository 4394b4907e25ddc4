//! Where training runs, and how many CPU threads it may use.

use candle_core::Device;

use super::{NnError, Result};

/// A run setting: which device trains the networks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeviceChoice {
    /// The GPU this build can drive when one answers, else the CPU: a CUDA build tries
    /// `cuda:0`, a Metal build Apple's GPU, any other build is the CPU.
    #[default]
    Auto,
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
            DeviceChoice::Auto => Ok(Self::gpu_of_this_build()
                .and_then(|g| g.open().ok())
                .unwrap_or(Device::Cpu)),
            DeviceChoice::Cpu => Ok(Device::Cpu),
            DeviceChoice::Cuda(i) => {
                if !cfg!(feature = "cuda") {
                    return Err(NnError::Device(
                        format!("cuda:{i}"),
                        "this build has no CUDA support; rebuild with `cargo build --release --features cuda` (needs the CUDA toolkit)".into(),
                    ));
                }
                Device::new_cuda(i)
                    .map_err(|e| NnError::Device(format!("cuda:{i}"), first_line(&e)))
            }
            DeviceChoice::Metal => {
                if !cfg!(feature = "metal") {
                    return Err(NnError::Device(
                        "metal".into(),
                        "this build has no Metal support; rebuild on macOS with `--features metal`"
                            .into(),
                    ));
                }
                Device::new_metal(0).map_err(|e| NnError::Device("metal".into(), first_line(&e)))
            }
        }
    }

    /// The GPU backend compiled into this binary, if any.
    fn gpu_of_this_build() -> Option<Self> {
        if cfg!(feature = "cuda") {
            Some(Self::Cuda(0))
        } else if cfg!(feature = "metal") {
            Some(Self::Metal)
        } else {
            None
        }
    }

    /// True when the choice will train on the CPU here: `cpu`, or `auto` where this build
    /// has no GPU backend or its GPU does not answer (asked once, then remembered).
    pub fn resolves_to_cpu(self) -> bool {
        match self {
            DeviceChoice::Cpu => true,
            DeviceChoice::Auto => !auto_finds_a_gpu(),
            _ => false,
        }
    }

    /// Where the networks will train, in words, for the cost preview.
    pub fn will_use(self) -> String {
        match self {
            DeviceChoice::Cpu => "the CPU".into(),
            DeviceChoice::Auto => match Self::gpu_of_this_build() {
                None => "the CPU (this build has no GPU support)".into(),
                Some(g) if auto_finds_a_gpu() => format!("the GPU ({})", g.name()),
                Some(g) => format!("the CPU ({} did not answer)", g.name()),
            },
            g => format!("the GPU ({})", g.name()),
        }
    }

    /// The `--device` spelling.
    pub fn name(self) -> String {
        match self {
            DeviceChoice::Auto => "auto".into(),
            DeviceChoice::Cpu => "cpu".into(),
            DeviceChoice::Cuda(i) => format!("cuda:{i}"),
            DeviceChoice::Metal => "metal".into(),
        }
    }

    /// The choices this build offers (the window's list).
    pub fn offered() -> Vec<Self> {
        let mut v = vec![DeviceChoice::Auto, DeviceChoice::Cpu];
        v.extend(Self::gpu_of_this_build());
        v
    }

    /// Parses `auto`, `cpu`, `cuda`, `cuda:N` or `metal`.
    pub fn parse(s: &str) -> Result<Self> {
        match s {
            "auto" => Ok(Self::Auto),
            "cpu" => Ok(Self::Cpu),
            "cuda" => Ok(Self::Cuda(0)),
            "metal" => Ok(Self::Metal),
            _ => match s.strip_prefix("cuda:").and_then(|n| n.parse().ok()) {
                Some(i) => Ok(Self::Cuda(i)),
                None => Err(NnError::Invalid(format!(
                    "unknown device '{s}'; use auto, cpu, cuda, cuda:N or metal"
                ))),
            },
        }
    }
}

/// A device error's message without the backtrace candle appends to it.
fn first_line(e: &candle_core::Error) -> String {
    e.to_string().lines().next().unwrap_or_default().to_string()
}

/// Whether this build's GPU opens; asked once per process (a CUDA context takes a while).
fn auto_finds_a_gpu() -> bool {
    static FOUND: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *FOUND.get_or_init(|| DeviceChoice::gpu_of_this_build().is_some_and(|g| g.open().is_ok()))
}

/// Names a device the way `--device` spells it, for messages and reports.
pub fn describe(dev: &Device) -> String {
    match dev {
        Device::Cpu => "cpu".into(),
        Device::Cuda(_) => "cuda".into(),
        Device::Metal(_) => "metal".into(),
    }
}

/// The CUDA binary installed beside this one, for [`handoff_target`].
pub const CUDA_BINARY: &str = "dpsynth-cuda";

/// Where a headless command should run instead of in this process: the CUDA build
/// installed beside this binary, when this build has no CUDA, the command may use a GPU
/// (`train` without `--device cpu`, `bench dpsgd --device cuda…`), and the NVIDIA driver
/// loads.
///
/// Why two binaries: candle 0.11 links cudarc with `dynamic-linking`, so a CUDA build
/// needs the driver's `libcuda.so.1` to *start*; cudarc's run-time loading cannot be
/// combined with it (its build script refuses both). A package therefore ships `dpsynth`
/// (the window and the CPU) and, optionally, `dpsynth-cuda` (headless, CUDA), and the
/// first hands GPU work to the second only where it can start. `DPSYNTH_HANDOFF=0` turns
/// this off.
pub fn handoff_target(args: &[std::ffi::OsString]) -> Option<std::path::PathBuf> {
    if cfg!(feature = "cuda") || std::env::var_os("DPSYNTH_HANDOFF").is_some_and(|v| v == "0") {
        return None;
    }
    let words: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let device = words
        .iter()
        .position(|w| w == "--device")
        .and_then(|i| words.get(i + 1).cloned())
        .or_else(|| {
            words
                .iter()
                .find_map(|w| w.strip_prefix("--device=").map(str::to_string))
        });
    let wants_gpu = match words.first().map(String::as_str) {
        Some("train") => device.as_deref().is_none_or(|d| d != "cpu" && d != "metal"),
        Some("bench") => device.as_deref().is_some_and(|d| d.starts_with("cuda")),
        _ => false,
    };
    if !wants_gpu {
        return None;
    }
    let target = std::env::current_exe().ok()?.with_file_name(CUDA_BINARY);
    (target.is_file() && nvidia_driver_loads()).then_some(target)
}

/// Whether the NVIDIA driver library can be loaded: the test a CUDA build's loader makes.
fn nvidia_driver_loads() -> bool {
    #[cfg(unix)]
    {
        // SAFETY: dlopen with a constant, NUL-terminated name; the handle is closed at once.
        unsafe {
            let h = libc::dlopen(c"libcuda.so.1".as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL);
            if h.is_null() {
                return false;
            }
            libc::dlclose(h);
            true
        }
    }
    #[cfg(not(unix))]
    false
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

    #[test]
    fn auto_falls_back_to_the_cpu_where_no_gpu_answers() {
        assert_eq!(DeviceChoice::parse("auto").unwrap(), DeviceChoice::Auto);
        assert_eq!(DeviceChoice::default(), DeviceChoice::Auto);
        if !cfg!(feature = "cuda") && !cfg!(feature = "metal") {
            assert!(DeviceChoice::Auto.resolves_to_cpu());
            assert!(DeviceChoice::Auto.will_use().contains("no GPU support"));
            assert!(DeviceChoice::Auto.open().unwrap().is_cpu());
        }
        assert!(!DeviceChoice::Cuda(0).resolves_to_cpu());
        assert_eq!(DeviceChoice::Cuda(1).name(), "cuda:1");
    }

    #[test]
    fn only_gpu_work_is_handed_to_the_cuda_binary() {
        let args = |s: &str| -> Vec<std::ffi::OsString> {
            std::iter::once("dpsynth")
                .chain(s.split_whitespace())
                .map(Into::into)
                .collect()
        };
        // No `dpsynth-cuda` sits beside the test binary, so nothing is ever handed off;
        // and CPU work is never handed off, whatever is installed.
        for cmd in [
            "train --data a.csv --device cpu",
            "inspect a.csv",
            "train --data a.csv",
        ] {
            assert_eq!(handoff_target(&args(cmd)), None, "{cmd}");
        }
    }
}
