// Per-class sums of the characteristic-function features of a block of rows:
//   out[chunk][c][j]     = Σ_{i in chunk, cls[i] = c} cos(t_j · x_i) / √k
//   out[chunk][c][k + j] = Σ_{i in chunk, cls[i] = c} sin(t_j · x_i) / √k
// One invocation per (frequency j, chunk of rows); the host adds the chunks up.
// CPU reference: `methods::embedding::class_sums` (tested against it in `gpu::embed`).

struct Params {
    rows: u32,
    width: u32,
    k: u32,
    classes: u32,
    rows_per_chunk: u32,
}

const MAX_CLASSES: u32 = 16u;

@group(0) @binding(0) var<storage, read> x: array<f32>;       // [rows, width]
@group(0) @binding(1) var<storage, read> omega: array<f32>;   // [width, k]
@group(0) @binding(2) var<storage, read> cls: array<u32>;     // [rows]
@group(0) @binding(3) var<storage, read_write> out: array<f32>; // [chunks, classes, 2k]
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let chunk = gid.y;
    if (j >= p.k) {
        return;
    }
    var acc_cos: array<f32, 16>;
    var acc_sin: array<f32, 16>;
    for (var c = 0u; c < MAX_CLASSES; c = c + 1u) {
        acc_cos[c] = 0.0;
        acc_sin[c] = 0.0;
    }
    let first = chunk * p.rows_per_chunk;
    let last = min(first + p.rows_per_chunk, p.rows);
    for (var i = first; i < last; i = i + 1u) {
        var proj = 0.0;
        let row = i * p.width;
        for (var t = 0u; t < p.width; t = t + 1u) {
            proj = proj + x[row + t] * omega[t * p.k + j];
        }
        let c = min(cls[i], MAX_CLASSES - 1u);
        acc_cos[c] = acc_cos[c] + cos(proj);
        acc_sin[c] = acc_sin[c] + sin(proj);
    }
    let scale = inverseSqrt(f32(p.k));
    for (var c = 0u; c < p.classes; c = c + 1u) {
        let base = (chunk * p.classes + c) * 2u * p.k;
        out[base + j] = acc_cos[c] * scale;
        out[base + p.k + j] = acc_sin[c] * scale;
    }
}
