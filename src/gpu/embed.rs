//! The characteristic-function embedding of PEARL and DP-MERF as a WGSL compute kernel
//! (`shaders/embedding.wgsl`): per-class sums of [cos(t_j·x), sin(t_j·x)] over the rows,
//! each pair put on an integer grid of [`GRID`] with its norm ≤ 1 checked in integers and
//! summed exactly, so the release's sensitivity holds for the computed numbers. This is
//! the heavy part of those methods (n·k·d multiply-adds, once per run); the CPU reference
//! is `methods::embedding::class_sums`, which the tests compare it with.
//!
//! Rows go up in blocks that fit the device's storage-buffer limit; each invocation sums
//! one frequency over one chunk of at most [`MAX_CHUNK_ROWS`] rows in 32-bit integers (all
//! WGSL has), and the host adds the chunks up in 64-bit integers.

use wgpu::util::DeviceExt as _;

use super::Gpu;

/// Classes a dispatch keeps in registers (the kernel's `MAX_CLASSES`).
pub const MAX_CLASSES: usize = 16;
const WORKGROUP: usize = 64;
/// One unit on the kernel's grid (`ONE` in the shader): the CPU's grid, so both devices
/// release the same statistic (a test holds them equal).
pub const GRID: i64 = 1 << 15;
/// Rows one invocation sums in an i32: |Σ| ≤ 2¹⁴ · [`GRID`] < 2³¹.
pub const MAX_CHUNK_ROWS: usize = 1 << 14;
const SHADER: &str = include_str!("../../shaders/embedding.wgsl");

/// Per-class sums, `classes × 2k` row-major, of the features of `x` (`rows × width`,
/// row-major) at the frequencies `omega` (`width × k`, row-major); `class[i]` is row i's
/// class.
pub fn class_sums(
    gpu: &Gpu,
    x: &[f32],
    width: usize,
    omega: &[f32],
    k: usize,
    class: &[u32],
    classes: usize,
) -> Result<Vec<i64>, String> {
    let rows = class.len();
    if classes == 0 || classes > MAX_CLASSES {
        return Err(format!(
            "the kernel sums 1 to {MAX_CLASSES} classes, not {classes}"
        ));
    }
    if x.len() != rows * width || omega.len() != width * k || width == 0 || k == 0 {
        return Err("the embedding kernel got inconsistent shapes".into());
    }
    let dev = &gpu.device;
    let module = dev.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("embedding.wgsl"),
        source: wgpu::ShaderSource::Wgsl(SHADER.into()),
    });
    let pipeline = dev.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("embedding"),
        layout: None,
        module: &module,
        entry_point: Some("main"),
        compilation_options: Default::default(),
        cache: None,
    });
    let omega_buf = storage(dev, "omega", bytes(omega));
    let max_floats = (gpu.limits.max_storage_buffer_binding_size as u64 / 4).min(1 << 26) as usize;
    let per_chunk_out = classes * 2 * k;
    // As many chunks as keep the partial sums within one binding, and the grid's y ≤ 65,535.
    let max_chunks = (max_floats / per_chunk_out).clamp(1, 65_535);
    let block = (max_floats / width)
        .clamp(1, rows.max(1))
        .min(max_chunks * MAX_CHUNK_ROWS);
    let mut total = vec![0i64; per_chunk_out];
    let mut start = 0;
    while start < rows {
        let len = block.min(rows - start);
        let chunks = len.div_ceil(WORKGROUP).clamp(1, max_chunks);
        let rows_per_chunk = len.div_ceil(chunks);
        let chunks = len.div_ceil(rows_per_chunk);
        if rows_per_chunk > MAX_CHUNK_ROWS {
            return Err("the embedding kernel's chunks would overflow its integer sums".into());
        }
        let part = dispatch(
            gpu,
            &pipeline,
            &omega_buf,
            &x[start * width..(start + len) * width],
            &class[start..start + len],
            [len, width, k, classes, rows_per_chunk, chunks],
        )?;
        for chunk in part.chunks(per_chunk_out) {
            for (t, v) in total.iter_mut().zip(chunk) {
                *t += *v as i64;
            }
        }
        start += len;
    }
    Ok(total)
}

fn bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|f| f.to_le_bytes()).collect()
}

fn storage(dev: &wgpu::Device, label: &str, contents: Vec<u8>) -> wgpu::Buffer {
    dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: &contents,
        usage: wgpu::BufferUsages::STORAGE,
    })
}

/// One block: uploads its rows and classes, runs the kernel, reads the partial sums back.
fn dispatch(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    omega: &wgpu::Buffer,
    x: &[f32],
    class: &[u32],
    [rows, width, k, classes, rows_per_chunk, chunks]: [usize; 6],
) -> Result<Vec<i32>, String> {
    let dev = &gpu.device;
    let xb = storage(dev, "rows", bytes(x));
    let cb = storage(
        dev,
        "classes",
        class.iter().flat_map(|c| c.to_le_bytes()).collect(),
    );
    let out_len = (chunks * classes * 2 * k * 4) as u64;
    let out = dev.create_buffer(&wgpu::BufferDescriptor {
        label: Some("partial sums"),
        size: out_len,
        usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    });
    let read = dev.create_buffer(&wgpu::BufferDescriptor {
        label: Some("read back"),
        size: out_len,
        usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
        mapped_at_creation: false,
    });
    // Five u32 parameters, padded to 32 bytes.
    let params: Vec<u8> = [rows, width, k, classes, rows_per_chunk, 0, 0, 0]
        .iter()
        .flat_map(|v| (*v as u32).to_le_bytes())
        .collect();
    let pb = dev.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("params"),
        contents: &params,
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let entries: Vec<wgpu::BindGroupEntry> = [&xb, omega, &cb, &out, &pb]
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    let bind = dev.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("embedding"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    });
    let mut enc = dev.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: None });
    {
        let mut pass = enc.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("embedding"),
            timestamp_writes: None,
        });
        pass.set_pipeline(pipeline);
        pass.set_bind_group(0, &bind, &[]);
        pass.dispatch_workgroups(k.div_ceil(WORKGROUP) as u32, chunks as u32, 1);
    }
    enc.copy_buffer_to_buffer(&out, 0, &read, 0, out_len);
    gpu.queue.submit([enc.finish()]);
    read_back(dev, &read)
}

/// The i32s of a mapped-readable buffer, once the queue has written them.
fn read_back(dev: &wgpu::Device, read: &wgpu::Buffer) -> Result<Vec<i32>, String> {
    let (tx, rx) = std::sync::mpsc::channel();
    read.slice(..).map_async(wgpu::MapMode::Read, move |r| {
        let _ = tx.send(r);
    });
    dev.poll(wgpu::PollType::wait_indefinitely())
        .map_err(|e| format!("the GPU did not finish: {e}"))?;
    rx.recv()
        .map_err(|e| format!("the read-back was dropped: {e}"))?
        .map_err(|e| format!("cannot read the GPU's result: {e}"))?;
    let view = read
        .slice(..)
        .get_mapped_range()
        .map_err(|e| format!("cannot read the GPU's result: {e}"))?;
    let v: Vec<i32> = view
        .chunks_exact(4)
        .map(|b| i32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    drop(view);
    read.unmap();
    Ok(v)
}
