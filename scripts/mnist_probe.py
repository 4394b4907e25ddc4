#!/usr/bin/env python3
"""Probes of the digit methods on public MNIST only (never the test digits): a validation split,
shape statistics of a digit CSV beside the real training digits, and augmentations of a
sampled CSV prototyped before any of them goes into `dpsynth sample --jitter`.

  scripts/mnist_probe.py split MNIST_DIR OUT
      OUT/val-*: the last 10,000 training digits (the validation split);
      OUT/small-*: the first 1,000 (a quick real-train for `evaluate`, whose real baseline
      is not what is measured). Score a CSV with
      dpsynth evaluate --real-train OUT/small-images-idx3-ubyte.gz \
          --real-test OUT/val-images-idx3-ubyte.gz --synthetic J.csv --json J.json
  scripts/mnist_probe.py stats MNIST_DIR CSV
      ink, stroke thickness, slant, size and centre of mass (mean ± spread), real against CSV
  scripts/mnist_probe.py augment IN.csv OUT.csv SEED [deg=10 zoom=0.1 shift=0.1 shear=0
      thin=0 thick=0 recentre=0 floor=0]
      `--jitter`'s turn, zoom and shift (scipy, bilinear), plus: a slant (shear), a stroke
      made thinner or thicker by a blend towards a 3×3 grey erosion or dilation (t drawn in
      [-thin, thick]), the centre of mass moved to MNIST's (14, 14) first, faint pixels
      (< floor of 255) set to black first.

Needs numpy and scipy. The CSVs are `dpsynth sample`'s: a label column, then 784 pixels in
0..255.
"""
import gzip
import struct
import sys

import numpy as np
from scipy import ndimage


def read_idx(path, header):
    return gzip.open(path).read()[header:]


def split(mnist, out):
    img = read_idx(f"{mnist}/train-images-idx3-ubyte.gz", 16)
    lab = read_idx(f"{mnist}/train-labels-idx1-ubyte.gz", 8)

    def write(name, a, b):
        with gzip.open(f"{out}/{name}-images-idx3-ubyte.gz", "wb") as f:
            f.write(struct.pack(">IIII", 2051, b - a, 28, 28) + img[a * 784 : b * 784])
        with gzip.open(f"{out}/{name}-labels-idx1-ubyte.gz", "wb") as f:
            f.write(struct.pack(">II", 2049, b - a) + lab[a:b])

    write("val", 50000, 60000)
    write("small", 0, 1000)


def load_csv(path):
    a = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float32)
    return a, open(path).readline().strip()


def shape_stats(x):
    """Per-digit ink, thickness (pixels over half / their edge pixels), slant (μ11/μ02),
    size (second moments) and centre of mass, for x of shape (n, 28, 28) in 0..1."""
    ii, jj = np.mgrid[0:28, 0:28]
    m = x.sum((1, 2)) + 1e-6
    ci, cj = (x * ii).sum((1, 2)) / m, (x * jj).sum((1, 2)) / m
    di, dj = ii[None] - ci[:, None, None], jj[None] - cj[:, None, None]
    b = x > 0.5
    inner = np.roll(b, 1, 1) & np.roll(b, -1, 1) & np.roll(b, 1, 2) & np.roll(b, -1, 2)
    edge = (b & ~inner).sum((1, 2)) + 1e-6
    return {
        "ink": x.sum((1, 2)),
        "thickness": b.sum((1, 2)) / edge,
        "slant": (x * di * dj).sum((1, 2)) / m / ((x * di * di).sum((1, 2)) / m),
        "height": np.sqrt((x * di * di).sum((1, 2)) / m),
        "width": np.sqrt((x * dj * dj).sum((1, 2)) / m),
        "centre row": ci,
        "centre column": cj,
    }


def stats(mnist, path):
    real = np.frombuffer(read_idx(f"{mnist}/train-images-idx3-ubyte.gz", 16), np.uint8)
    real = real.reshape(-1, 28, 28)[:50000].astype(np.float32) / 255
    synth = load_csv(path)[0][:, 1:].reshape(-1, 28, 28) / 255
    for name, x in [("real (first 50,000)", real), (path, synth)]:
        s = shape_stats(x)
        print(name + ": " + ", ".join(f"{k} {v.mean():.2f} ± {v.std():.2f}" for k, v in s.items()))


def augment(src, dst, seed, opts):
    o = {k: float(v) for k, v in (a.split("=") for a in opts)}
    deg, zoom, shift = o.get("deg", 10), o.get("zoom", 0.1), o.get("shift", 0.1)
    shear, thin, thick = o.get("shear", 0), o.get("thin", 0), o.get("thick", 0)
    recentre, floor = o.get("recentre", 0), o.get("floor", 0)
    rng = np.random.default_rng(seed)
    a, header = load_csv(src)
    x = a[:, 1:].reshape(-1, 28, 28)
    if floor:
        x = np.where(x < floor, 0, x)
    cross = np.array([[0, 1, 0], [1, 1, 1], [0, 1, 0]], bool)
    ii, jj = np.mgrid[0:28, 0:28]
    c = np.array([13.5, 13.5])
    u = lambda r: rng.uniform(-r, r) if r else 0.0  # noqa: E731
    out = np.empty_like(x)
    for i, im in enumerate(x):
        t = rng.uniform(-thin, thick) if thin or thick else 0.0
        if t > 0:
            im = im + t * (ndimage.grey_dilation(im, footprint=cross) - im)
        elif t < 0:
            im = im - t * (ndimage.grey_erosion(im, footprint=cross) - im)
        off = np.zeros(2)
        if recentre and im.sum() > 0:
            off = np.array([(im * ii).sum(), (im * jj).sum()]) / im.sum() - 14.0
        th, s = np.deg2rad(u(deg)), 1 + u(zoom)
        d = np.array([u(shift) * 28, u(shift) * 28])
        a_ = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]]) / s
        a_ = a_ @ np.array([[1, 0], [u(shear), 1]])
        # Output pixel p reads the input at A·(p − c − d) + c + off.
        offset = c + off - a_ @ (c + d)
        out[i] = ndimage.affine_transform(im, a_, offset=offset, order=1, cval=0.0)
    a[:, 1:] = np.clip(out.reshape(len(x), -1), 0, 255)
    np.savetxt(dst, a, delimiter=",", fmt=["%d"] + ["%.0f"] * 784, header=header, comments="")


if __name__ == "__main__":
    cmd, args = (sys.argv[1], sys.argv[2:]) if len(sys.argv) > 1 else ("", [])
    if cmd == "split" and len(args) == 2:
        split(*args)
    elif cmd == "stats" and len(args) == 2:
        stats(*args)
    elif cmd == "augment" and len(args) >= 3:
        augment(args[0], args[1], int(args[2]), args[3:])
    else:
        sys.exit(__doc__)
