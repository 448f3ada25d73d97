"""The K formats through libwick against the gguf package (numpy):
 - wick's dequantization of ggml's bytes (tests/fixtures/quant/k_*.dat) and of wick's
   own quantization of fresh random rows equals gguf.quants.dequantize bit for bit
   (Q2_K ... Q6_K; the gguf package has no Q8_K);
 - wick's quantizer reproduces ggml's bytes from the fixtures' inputs (the C test does
   the same; here through the public library call).
"""
import ctypes
import os
import struct
import sys

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

TYPES = [("q2_k", T.Q2_K, 84), ("q3_k", T.Q3_K, 110), ("q4_k", T.Q4_K, 144),
         ("q5_k", T.Q5_K, 176), ("q6_k", T.Q6_K, 210), ("q8_k", None, 292)]
GGML_ID = {"q2_k": 10, "q3_k": 11, "q4_k": 12, "q5_k": 13, "q6_k": 14, "q8_k": 15}


def load_lib():
    lib = ctypes.CDLL(os.environ["WICK_LIB"])
    lib.wk_last_error.restype = ctypes.c_char_p
    for fn in ("wk_quantize_row", "wk_dequantize_row"):
        f = getattr(lib, fn)
        f.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
        f.restype = ctypes.c_int
    return lib


def fixture(name):
    return os.path.join(os.environ["WICK_SOURCE_DIR"], "tests", "fixtures", "quant", name)


def read_inputs():
    with open(fixture("k_inputs.dat"), "rb") as f:
        magic, version, n_rows = struct.unpack("<4sII", f.read(12))
        assert magic == b"WKKI" and version == 1
        rows = []
        for _ in range(n_rows):
            kind, n = struct.unpack("<II", f.read(8))
            rows.append(np.frombuffer(f.read(4 * n), dtype="<f4").copy())
        return rows


def read_expected(name, rows):
    with open(fixture("k_%s.dat" % name), "rb") as f:
        magic, version, tid, n_rows, bb = struct.unpack("<4sIIII", f.read(20))
        assert magic == b"WKKQ" and version == 1 and tid == GGML_ID[name] and n_rows == len(rows)
        out = []
        for x in rows:
            q = f.read(x.size // 256 * bb)
            y = np.frombuffer(f.read(4 * x.size), dtype="<f4").copy()
            out.append((q, y))
        return out


def quantize(lib, tid, x, bb):
    buf = ctypes.create_string_buffer(x.size // 256 * bb)
    xs = np.ascontiguousarray(x, dtype=np.float32)
    st = lib.wk_quantize_row(tid, xs.ctypes.data, ctypes.addressof(buf), x.size)
    assert st == 0, lib.wk_last_error()
    return buf.raw


def dequantize(lib, tid, q, n):
    y = np.empty(n, dtype=np.float32)
    buf = ctypes.create_string_buffer(q, len(q))
    st = lib.wk_dequantize_row(tid, ctypes.addressof(buf), y.ctypes.data, n)
    assert st == 0, lib.wk_last_error()
    return y


def same_bits(a, b):
    return np.array_equal(np.asarray(a, np.float32).view(np.uint32),
                          np.asarray(b, np.float32).view(np.uint32))


def main():
    lib = load_lib()
    rows = read_inputs()
    rng = np.random.default_rng(7)
    fresh = [rng.standard_normal(256 * 16).astype(np.float32),
             (0.02 * rng.standard_normal(256 * 8)).astype(np.float32),
             rng.uniform(-3, 1, 256 * 8).astype(np.float32)]
    checks = 0
    for name, gtype, bb in TYPES:
        tid = GGML_ID[name]
        for x, (q, y) in zip(rows, read_expected(name, rows)):
            assert quantize(lib, tid, x, bb) == q, (name, "quantize differs from ggml")
            got = dequantize(lib, tid, q, x.size)
            assert same_bits(got, y), (name, "dequantize differs from ggml")
            if gtype is not None:
                ref = gguf.quants.dequantize(np.frombuffer(q, dtype=np.uint8), gtype).reshape(-1)
                assert same_bits(got, ref), (name, "dequantize differs from gguf",
                                             np.flatnonzero(got != ref)[:5])
            checks += 3
        if gtype is None:
            continue
        for x in fresh:
            q = quantize(lib, tid, x, bb)
            got = dequantize(lib, tid, q, x.size)
            ref = gguf.quants.dequantize(np.frombuffer(q, dtype=np.uint8), gtype).reshape(-1)
            assert same_bits(got, ref), (name, "dequantize differs from gguf on fresh rows")
            checks += 1
    print("test_quant_kquants: %d checks passed" % checks)


if __name__ == "__main__":
    sys.exit(main())
