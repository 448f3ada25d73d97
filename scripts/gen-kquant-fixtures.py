#!/usr/bin/env python3
"""Regenerate tests/fixtures/quant/k*.dat: the K formats as ggml's reference code writes them.

Calls ggml's reference quantizers (quantize_row_q{2..6,8}_K_ref) and dequantizers
(dequantize_row_q*_K) from llama-cpp-python's libggml-base.so through ctypes, on rows
of float32 drawn from several distributions (normal, uniform, outliers, all-zero,
weight-like, all-positive, and rows that mix zero, constant, tiny and normal groups),
each at lengths 256, 768 and 1536.

Usage: scripts/gen-kquant-fixtures.py [--lib PATH/libggml-base.so] [--out DIR]

Files (all little-endian):
  k_inputs.dat   "WKKI", u32 version (1), u32 n_rows; per row: u32 kind, u32 n, f32[n]
  k_<type>.dat   "WKKQ", u32 version (1), u32 ggml type id, u32 n_rows, u32 block bytes;
                 per row (same order as the inputs): u8[n/256*block bytes] quantized,
                 f32[n] ggml's dequantization of those bytes
The quantizer's output buffer is zeroed first: for an all-zero super-block ggml's Q8_K
quantizer leaves bsums unwritten, and zeros are what wick writes there.
"""
import argparse
import ctypes
import glob
import os
import struct
import sys

import numpy as np

QK_K = 256
# name, ggml type id, bytes per 256-element block
TYPES = [
    ("q2_k", 10, 84),
    ("q3_k", 11, 110),
    ("q4_k", 12, 144),
    ("q5_k", 13, 176),
    ("q6_k", 14, 210),
    ("q8_k", 15, 292),
]
LENGTHS = [256, 768, 1536]
KINDS = ["normal", "uniform", "outliers", "zeros", "weights", "positive", "mixed"]


def find_lib():
    pats = [
        "/work/ref/venv/lib/python3*/site-packages/llama_cpp/lib/libggml-base.so",
    ]
    try:
        import llama_cpp  # noqa: F401

        pats.insert(0, os.path.join(os.path.dirname(llama_cpp.__file__), "lib", "libggml-base.so"))
    except ImportError:
        pass
    for p in pats:
        hits = glob.glob(p)
        if hits:
            return hits[0]
    sys.exit("libggml-base.so not found; pass --lib")


def make_row(rng, kind, n):
    if kind == "normal":
        return rng.standard_normal(n)
    if kind == "uniform":
        return rng.uniform(-1.0, 1.0, n)
    if kind == "outliers":
        x = 0.02 * rng.standard_normal(n)
        idx = rng.choice(n, max(1, n // 64), replace=False)
        x[idx] *= rng.uniform(20.0, 80.0, idx.size)
        return x
    if kind == "zeros":
        return np.zeros(n)
    if kind == "weights":
        return 0.02 * rng.standard_normal(n)
    if kind == "positive":
        return np.abs(rng.standard_normal(n)) + 0.1
    if kind == "mixed":
        # groups of 16 that each exercise a different branch of the searches
        x = rng.standard_normal(n)
        for g in range(n // 16):
            sel = rng.integers(0, 6)
            s = slice(16 * g, 16 * g + 16)
            if sel == 0:
                x[s] = 0.0
            elif sel == 1:
                x[s] = rng.uniform(-2, 2)  # constant group
            elif sel == 2:
                x[s] *= 1e-8  # tiny
            elif sel == 3:
                x[s] = -np.abs(x[s])  # all negative
            elif sel == 4:
                x[s] *= 1e3  # large
        return x
    raise ValueError(kind)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lib", default=None)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "quant"))
    ap.add_argument("--seed", type=int, default=20240611)
    args = ap.parse_args()

    lib = ctypes.CDLL(args.lib or find_lib())
    os.makedirs(args.out, exist_ok=True)
    rng = np.random.default_rng(args.seed)

    rows = []
    for ki, kind in enumerate(KINDS):
        for n in LENGTHS:
            rows.append((ki, np.ascontiguousarray(make_row(rng, kind, n), dtype=np.float32)))

    with open(os.path.join(args.out, "k_inputs.dat"), "wb") as f:
        f.write(b"WKKI" + struct.pack("<II", 1, len(rows)))
        for ki, x in rows:
            f.write(struct.pack("<II", ki, x.size))
            f.write(x.astype("<f4").tobytes())

    fp = ctypes.POINTER(ctypes.c_float)
    for name, tid, bb in TYPES:
        suffix = name[:-1] + "K"  # q4_k -> q4_K
        quant = getattr(lib, "quantize_row_%s_ref" % suffix)
        quant.argtypes = [fp, ctypes.c_void_p, ctypes.c_int64]
        quant.restype = None
        deq = getattr(lib, "dequantize_row_%s" % suffix)
        deq.argtypes = [ctypes.c_void_p, fp, ctypes.c_int64]
        deq.restype = None
        with open(os.path.join(args.out, "k_%s.dat" % name), "wb") as f:
            f.write(b"WKKQ" + struct.pack("<IIII", 1, tid, len(rows), bb))
            for _, x in rows:
                nbytes = x.size // QK_K * bb
                q = ctypes.create_string_buffer(nbytes)  # zeroed
                quant(x.ctypes.data_as(fp), q, x.size)
                y = np.empty(x.size, dtype=np.float32)
                deq(q, y.ctypes.data_as(fp), x.size)
                f.write(q.raw)
                f.write(y.astype("<f4").tobytes())
    total = sum(os.path.getsize(p) for p in glob.glob(os.path.join(args.out, "k_*.dat")))
    print("wrote %d rows x %d types to %s (%d bytes)" % (len(rows), len(TYPES), args.out, total))


if __name__ == "__main__":
    main()
