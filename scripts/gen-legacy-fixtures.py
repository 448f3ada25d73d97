#!/usr/bin/env python3
"""Write tests/fixtures/quant/legacy_ggml.dat: rows of floats and what ggml's reference
code makes of them, for the 32-element formats.

For each of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 and Q8_1: the bytes of ggml's quantize_row_<t>_ref
and, where ggml has one (all but Q8_1), the floats of its dequantize_row_<t> on those bytes.
ggml is called through ctypes in the libggml-base.so that llama-cpp-python ships (built
for baseline x86-64 there, so its float code has no fused multiply-adds). The data are
drawn from a fixed seed, so running this again writes the same file.

Usage: /work/ref/venv/bin/python scripts/gen-legacy-fixtures.py [--lib PATH] [--out PATH]

File layout (little-endian):
  "WKLEGFX1"                      magic, 8 bytes
  u32 rows, u32 n, u32 types      n = elements per row
  f32 x[rows][n]                  the input rows
  per type:
    u32 ggml_type, u32 row_bytes, u32 has_floats
    u8  q[rows][row_bytes]        quantize_row_<t>_ref
    f32 y[rows][n]                dequantize_row_<t>(q), if has_floats
"""
import argparse
import ctypes
import glob
import os
import struct

import numpy as np

TYPES = [  # name, ggml type id, bytes per 32-block, has a dequantizer in ggml-base
    ("q4_0", 2, 18, True),
    ("q4_1", 3, 20, True),
    ("q5_0", 6, 22, True),
    ("q5_1", 7, 24, True),
    ("q8_0", 8, 34, True),
    ("q8_1", 9, 36, False),
]
ROWS_N = 512
SEED = 20261129


def default_lib():
    hits = glob.glob(os.path.join(os.path.dirname(np.__file__), "..", "llama_cpp", "lib",
                                  "libggml-base.so"))
    return hits[0] if hits else "libggml-base.so"


def fusion_row(rng, n, top, symmetric):
    """A row where fusing x*id + offset into one rounding changes codes (see legacy.c):
    products that round onto -(k + 1/2) (symmetric, offset top + 1/2) or 1/2 (affine,
    offset 1/2, block min 0) from just beyond."""
    f32 = np.float32
    off = f32(top + 0.5) if symmetric else f32(0.5)
    x = np.empty(n, dtype=np.float32)
    for b in range(n // 32):
        m = f32(rng.uniform(0.5, 4.0))
        m = -m if symmetric and rng.random() < 0.5 else m
        d = m / f32(-top) if symmetric else m / f32(top)
        inv = f32(1) / d
        blk = np.empty(32, dtype=np.float32)
        for j in range(32):
            target = -(int(rng.integers(top // 2, top)) + 0.5) if symmetric else 0.5
            cand = f32(target / float(inv))
            blk[j] = cand
            for _ in range(3):
                cand = np.nextafter(cand, f32(-np.inf))
            for _ in range(7):
                fused = int(np.trunc(f32(float(cand) * float(inv) + float(off))))
                if fused != int(np.trunc(f32(cand * inv) + off)) and (symmetric or cand > 0):
                    blk[j] = cand
                    break
                cand = np.nextafter(cand, f32(np.inf))
        pos = rng.choice(32, 2, replace=False)
        blk[pos[0]] = m
        if not symmetric:
            blk[pos[1]] = 0.0
        x[b * 32:(b + 1) * 32] = blk
    return x


def make_rows(rng, n):
    """Rows that reach the corners: every row is n floats, blocks of 32."""
    rows = []
    rows.append(rng.standard_normal(n))
    rows.append(rng.uniform(-1, 1, n))
    out = rng.standard_normal(n)
    out[rng.choice(n, n // 16, replace=False)] *= 100.0
    rows.append(out)
    rows.append(rng.standard_normal(n) * 1e-6)
    # zero blocks: +0, -0, mixed signs, and zeros at the extremes of otherwise one-signed
    # blocks (the sign of a zero min or max is decided by which occurrence wins)
    z = rng.standard_normal(n)
    z[0:32] = 0.0
    z[32:64] = -0.0
    z[64:96] = np.where(rng.random(32) < 0.5, 0.0, -0.0)
    z[96:128] = np.abs(rng.standard_normal(32))
    z[96 + rng.choice(32, 3, replace=False)] = -0.0
    z[128:160] = -np.abs(rng.standard_normal(32))
    z[128 + rng.choice(32, 3, replace=False)] = 0.0
    rows.append(z)
    # exact ties: scale fixed by a power-of-two max, other elements at half steps
    for top in (8, 16, 127):
        t = np.empty(n)
        for b in range(n // 32):
            e = 2.0 ** rng.integers(-6, 4)
            k = rng.integers(-top, top, size=32) + 0.5
            blk = k * e
            blk[rng.integers(32)] = top * e * (1 if rng.random() < 0.5 else -1)
            t[b * 32:(b + 1) * 32] = blk
        rows.append(t)
    for top in (15, 31):
        t = np.empty(n)
        for b in range(n // 32):
            e = 2.0 ** rng.integers(-6, 4)
            blk = (rng.integers(0, top, size=32) + 0.5) * e
            blk[rng.integers(32)] = 0.0
            blk[rng.integers(32)] = top * e
            t[b * 32:(b + 1) * 32] = blk
        rows.append(t)
    for top, symmetric in ((8, True), (16, True), (15, False), (31, False)):
        rows.append(fusion_row(rng, n, top, symmetric))
    return np.array(rows, dtype=np.float32)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lib", default=default_lib())
    ap.add_argument("--out", default=os.path.join(here, "..", "tests", "fixtures", "quant",
                                                  "legacy_ggml.dat"))
    args = ap.parse_args()
    ggml = ctypes.CDLL(args.lib)

    x = make_rows(np.random.default_rng(SEED), ROWS_N)
    rows, n = x.shape
    parts = [b"WKLEGFX1", struct.pack("<III", rows, n, len(TYPES)), x.tobytes()]
    for name, tid, bb, has_deq in TYPES:
        quant = getattr(ggml, f"quantize_row_{name}_ref")
        quant.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        quant.restype = None
        row_bytes = n // 32 * bb
        q = np.zeros((rows, row_bytes), dtype=np.uint8)
        for r in range(rows):
            quant(x[r].ctypes.data, q[r].ctypes.data, n)
        parts += [struct.pack("<III", tid, row_bytes, int(has_deq)), q.tobytes()]
        if has_deq:
            deq = getattr(ggml, f"dequantize_row_{name}")
            deq.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
            deq.restype = None
            y = np.zeros((rows, n), dtype=np.float32)
            for r in range(rows):
                deq(q[r].ctypes.data, y[r].ctypes.data, n)
            parts.append(y.tobytes())
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "wb") as f:
        for p in parts:
            f.write(p)
    print(f"wrote {args.out}: {rows} rows of {n}, {len(TYPES)} types, "
          f"{os.path.getsize(args.out)} bytes (ggml from {args.lib})")


if __name__ == "__main__":
    main()
