// Per-class sums of the characteristic-function features of a block of rows, on an
// integer grid of ONE per unit (the host scales them by 1 / (√k · ONE)):
//   out[chunk][c][j]     = Σ_{i in chunk, cls[i] = c} grid(cos(t_j · x_i))
//   out[chunk][c][k + j] = Σ_{i in chunk, cls[i] = c} grid(sin(t_j · x_i))
// where each (cos, sin) pair is rounded toward zero and shrunk until its squared norm is
// at most ONE² in integers: one row then moves the sums by at most 1 in norm, whatever
// the GPU's cos and sin return (WGSL allows them an error of 2⁻¹¹), and the integer sums
// are exact. One invocation per (frequency j, chunk of ≤ 2¹⁴ rows, so |Σ| < 2³¹); the
// host adds the chunks up in 64-bit integers.
// CPU reference: `methods::embedding::class_sums` with `embedding::fixed::unit_pair`.

struct Params {
    rows: u32,
    width: u32,
    k: u32,
    classes: u32,
    rows_per_chunk: u32,
}

const MAX_CLASSES: u32 = 16u;
const ONE: i32 = 32768;

fn norm_sq(q: vec2<i32>) -> u32 {
    // Each square ≤ 2³⁰, so the sum fits a u32.
    return u32(q.x * q.x) + u32(q.y * q.y);
}

// A cosine-sine pair on the grid, inside the unit circle by an integer check.
fn unit_pair(c: f32, s: f32) -> vec2<i32> {
    var q = vec2<i32>(
        clamp(i32(trunc(clamp(c, -1.0, 1.0) * 32768.0)), -ONE, ONE),
        clamp(i32(trunc(clamp(s, -1.0, 1.0) * 32768.0)), -ONE, ONE),
    );
    let limit = u32(ONE * ONE);
    if (norm_sq(q) > limit) {
        let r = sqrt(f32(norm_sq(q)));
        q = vec2<i32>(vec2<f32>(q) * (32768.0 / r));
        for (var t = 0; t < 64 && norm_sq(q) > limit; t = t + 1) {
            if (abs(q.x) >= abs(q.y)) {
                q.x = q.x - sign(q.x);
            } else {
                q.y = q.y - sign(q.y);
            }
        }
        if (norm_sq(q) > limit) {
            q = vec2<i32>(0, 0);
        }
    }
    return q;
}

@group(0) @binding(0) var<storage, read> x: array<f32>;       // [rows, width]
@group(0) @binding(1) var<storage, read> omega: array<f32>;   // [width, k]
@group(0) @binding(2) var<storage, read> cls: array<u32>;     // [rows]
@group(0) @binding(3) var<storage, read_write> out: array<i32>; // [chunks, classes, 2k]
@group(0) @binding(4) var<uniform> p: Params;

@compute @workgroup_size(64, 1, 1)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let j = gid.x;
    let chunk = gid.y;
    if (j >= p.k) {
        return;
    }
    var acc_cos: array<i32, 16>;
    var acc_sin: array<i32, 16>;
    for (var c = 0u; c < MAX_CLASSES; c = c + 1u) {
        acc_cos[c] = 0;
        acc_sin[c] = 0;
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
        let q = unit_pair(cos(proj), sin(proj));
        acc_cos[c] = acc_cos[c] + q.x;
        acc_sin[c] = acc_sin[c] + q.y;
    }
    for (var c = 0u; c < p.classes; c = c + 1u) {
        let base = (chunk * p.classes + c) * 2u * p.k;
        out[base + j] = acc_cos[c];
        out[base + p.k + j] = acc_sin[c];
    }
}
