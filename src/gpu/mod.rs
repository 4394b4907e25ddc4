//! wgpu for compute: one headless device per process, opened on first use, with a CPU
//! path wherever it is used (no adapter, or one without compute shaders — the GL
//! fallback — and the caller computes on the CPU instead).
//!
//! The window renders with its own eframe device; compute kernels run on this one, from
//! the job's worker thread, so a long dispatch never delays a frame. Kernels live in
//! `shaders/`, one file each, with a CPU reference they are tested against.

pub mod embed;

use std::sync::OnceLock;

/// An open compute device.
pub struct Gpu {
    pub device: wgpu::Device,
    pub queue: wgpu::Queue,
    /// The adapter's name and backend, for benchmarks and logs.
    pub name: String,
    /// A software rasteriser (lavapipe, llvmpipe, WARP): correct, slower than the CPU path.
    pub software: bool,
    pub limits: wgpu::Limits,
}

static CONTEXT: OnceLock<Result<Gpu, String>> = OnceLock::new();

/// The process's compute device, or why there is none.
pub fn context() -> Result<&'static Gpu, String> {
    CONTEXT.get_or_init(open).as_ref().map_err(Clone::clone)
}

fn open() -> Result<Gpu, String> {
    // Vulkan, Metal and DX12 only (`WGPU_BACKEND` overrides): GL has no compute shaders,
    // and probing it without a display prints alarming errors on a headless machine.
    let mut desc = wgpu::InstanceDescriptor::new_without_display_handle();
    desc.backends = wgpu::Backends::from_env().unwrap_or(wgpu::Backends::PRIMARY);
    let instance = wgpu::Instance::new(desc);
    let adapter = pollster::block_on(instance.request_adapter(&wgpu::RequestAdapterOptions {
        power_preference: wgpu::PowerPreference::HighPerformance,
        ..Default::default()
    }))
    .map_err(|e| format!("no GPU adapter: {e}"))?;
    let info = adapter.get_info();
    if !adapter
        .get_downlevel_capabilities()
        .flags
        .contains(wgpu::DownlevelFlags::COMPUTE_SHADERS)
    {
        return Err(format!(
            "{} ({:?}) has no compute shaders",
            info.name, info.backend
        ));
    }
    // The adapter's own storage limits: an embedding block is as large as they allow.
    let supported = adapter.limits();
    let limits = wgpu::Limits {
        max_storage_buffer_binding_size: supported.max_storage_buffer_binding_size,
        max_buffer_size: supported.max_buffer_size,
        ..wgpu::Limits::default()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        label: Some("dpsynth compute"),
        required_limits: limits.clone(),
        ..Default::default()
    }))
    .map_err(|e| format!("{}: cannot open the device: {e}", info.name))?;
    Ok(Gpu {
        device,
        queue,
        name: format!("{} ({:?})", info.name, info.backend),
        software: info.device_type == wgpu::DeviceType::Cpu,
        limits,
    })
}
