"""wick's 32-element and dense formats against the gguf Python package, byte for byte.

For Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, BF16 and F16, on freshly drawn rows (normal, uniform,
heavy outliers, all-zero, exact rounding ties, tiny values, -0.0, half-range extremes) of
256, 768 and 1536 elements: wk_quantize_row must write exactly gguf.quants.quantize's bytes,
and wk_dequantize_row must give exactly gguf.quants.dequantize's floats (compared as bits).
Q8_1 is not in the gguf package; its committed ggml fixtures are checked here too.

Run as a script: exits non-zero on any mismatch. Env: WICK_LIB (libwick.so),
WICK_SOURCE_DIR (for tests/fixtures), WICK_TEST_SEED (optional, else random and printed).
"""
import ctypes
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants


def load_wick():
    """libwick.so from WICK_LIB, with the row conversion functions typed."""
    path = os.environ.get("WICK_LIB", "build/libwick.so")
    lib = ctypes.CDLL(os.path.abspath(path))
    lib.wk_quantize_row.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    lib.wk_quantize_row.restype = ctypes.c_int
    lib.wk_dequantize_row.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                      ctypes.c_int64]
    lib.wk_dequantize_row.restype = ctypes.c_int
    lib.wk_type_row_bytes.argtypes = [ctypes.c_int, ctypes.c_int64, ctypes.POINTER(ctypes.c_size_t)]
    lib.wk_type_row_bytes.restype = ctypes.c_int
    lib.wk_last_error.argtypes = []
    lib.wk_last_error.restype = ctypes.c_char_p
    return lib


def wick_row_bytes(lib, qtype, n):
    out = ctypes.c_size_t()
    st = lib.wk_type_row_bytes(int(qtype), n, ctypes.byref(out))
    if st != 0:
        raise RuntimeError(f"wk_type_row_bytes: {lib.wk_last_error().decode()}")
    return out.value


def wick_quantize(lib, qtype, x):
    """wk_quantize_row over one row of float32; the bytes as a uint8 array."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    out = np.zeros(wick_row_bytes(lib, qtype, x.size), dtype=np.uint8)
    st = lib.wk_quantize_row(int(qtype), x.ctypes.data, out.ctypes.data, x.size)
    if st != 0:
        raise RuntimeError(f"wk_quantize_row: {lib.wk_last_error().decode()}")
    return out


def wick_dequantize(lib, qtype, raw, n):
    """wk_dequantize_row of n elements (any number of rows laid end to end)."""
    raw = np.ascontiguousarray(raw).view(np.uint8)
    out = np.empty(n, dtype=np.float32)
    st = lib.wk_dequantize_row(int(qtype), raw.ctypes.data, out.ctypes.data, n)
    if st != 0:
        raise RuntimeError(f"wk_dequantize_row: {lib.wk_last_error().decode()}")
    return out

TYPES = [T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0, T.BF16, T.F16]
LENGTHS = [256, 768, 1536]


def tie_rows(rng, n, qtype):
    """Rows whose scaled values land exactly on a rounding boundary of the quantizer.

    For the symmetric formats the block's signed max M sets the scale exactly (M = -8d,
    -16d or 127d with d a power of two), and the other elements are (k + 1/2) * d, which
    x * (1/d) reproduces exactly; for the affine formats min = 0 and max = 15d or 31d."""
    rows = []
    for _ in range(2):
        x = np.empty(n, dtype=np.float32)
        for b in range(n // 32):
            e = float(2.0 ** rng.integers(-6, 4))
            if qtype in (T.Q4_0, T.Q5_0):
                top = 8 if qtype == T.Q4_0 else 16
                k = rng.integers(-top, top, size=32).astype(np.float64) + 0.5
                blk = k * e
                blk[rng.integers(32)] = -top * e if rng.random() < 0.5 else top * e
            elif qtype in (T.Q4_1, T.Q5_1):
                top = 15 if qtype == T.Q4_1 else 31
                k = rng.integers(0, top, size=32).astype(np.float64) + 0.5
                blk = k * e
                blk[rng.integers(32)] = 0.0
                blk[rng.integers(32)] = top * e
            elif qtype == T.Q8_0:
                k = rng.integers(-127, 127, size=32).astype(np.float64) + 0.5
                blk = k * e
                blk[rng.integers(32)] = 127 * e
            else:  # dense: values halfway between two representable halves / bfloat16s
                lo = rng.integers(0x3c00, 0x4c00, size=32).astype(np.uint16)
                if qtype == T.F16:
                    a = lo.view(np.float16).astype(np.float64)
                    b2 = (lo + 1).view(np.float16).astype(np.float64)
                else:
                    a = (lo.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
                    b2 = ((lo.astype(np.uint32) + 1) << 16).view(np.float32).astype(np.float64)
                blk = (a + b2) / 2 * np.where(rng.random(32) < 0.5, -1, 1)
            x[b * 32:(b + 1) * 32] = blk
        rows.append(x)
    return rows


def make_rows(rng, n, qtype):
    """(label, row) pairs of one length for one type."""
    rows = [
        ("normal", rng.standard_normal(n).astype(np.float32)),
        ("normal*1e-3", (rng.standard_normal(n) * 1e-3).astype(np.float32)),
        ("uniform", rng.uniform(-1, 1, n).astype(np.float32)),
        ("uniform+", rng.uniform(0.5, 3, n).astype(np.float32)),
        ("uniform-", rng.uniform(-3, -0.5, n).astype(np.float32)),
        ("zeros", np.zeros(n, dtype=np.float32)),
        ("tiny", (rng.standard_normal(n) * 1e-6).astype(np.float32)),
        ("big", (rng.standard_normal(n) * 1e3).astype(np.float32)),
    ]
    out = rng.standard_normal(n).astype(np.float32)
    idx = rng.choice(n, n // 16, replace=False)
    out[idx] *= 100.0
    rows.append(("outliers", out))
    # one all-zero block in the middle of a normal row, and blocks with -0.0 entries
    z = rng.standard_normal(n).astype(np.float32)
    z[32:64] = 0.0
    rows.append(("zero block", z))
    nz = rng.standard_normal(n).astype(np.float32)
    nz[rng.choice(n, n // 8, replace=False)] = -0.0
    if qtype in (T.Q4_1, T.Q5_1):
        # a -0.0 min or max has no stable numpy answer (see legacy.c): keep zeros off
        # the block extremes by making every block hold a positive and a negative value
        nz[0::32] = 2.5
        nz[1::32] = -2.5
    rows.append(("-0.0 mixed", nz))
    if qtype not in (T.Q4_1, T.Q5_1):
        rows.append(("all -0.0", np.full(n, -0.0, dtype=np.float32)))
    # values near the half range: large scales, and halves that round to inf for F16
    if qtype != T.F16:
        rows.append(("half-range", (rng.uniform(-1, 1, n) * 6e4).astype(np.float32)))
    else:
        rows.append(("f16 overflow", (rng.uniform(-1, 1, n) * 7e4).astype(np.float32)))
        rows.append(("f16 subnormal", (rng.standard_normal(n) * 1e-6).astype(np.float32)))
    rows += [("ties", r) for r in tie_rows(rng, n, qtype)]
    return rows


def bits_equal(a, b):
    a = np.ascontiguousarray(a, dtype=np.float32)
    b = np.ascontiguousarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


def check_q8_1_fixtures(lib, root):
    """Q8_1 against ggml's quantize_row_q8_1_ref output committed in tests/fixtures."""
    path = os.path.join(root, "tests", "fixtures", "quant", "legacy_q8_1.npz")
    if not os.path.exists(path):
        print(f"FAIL q8_1: fixture {path} missing (scripts/gen-legacy-fixtures.py)")
        return 1
    fx = np.load(path)
    x, ref = fx["x"], fx["q8_1"]
    bad = 0
    for r in range(x.shape[0]):
        got = wick_quantize(lib, T.Q8_1, x[r])
        if got.tobytes() != ref[r].tobytes():
            g = np.frombuffer(got.tobytes(), np.uint8).reshape(-1, 36)
            e = ref[r].reshape(-1, 36)
            blk = int(np.nonzero((g != e).any(axis=1))[0][0])
            print(f"FAIL q8_1 fixture row {r}: block {blk} wick {g[blk].tobytes().hex()} "
                  f"ggml {e[blk].tobytes().hex()}")
            bad += 1
    print(f"q8_1: {x.shape[0]} fixture rows of {x.shape[1]} from ggml, {x.shape[0] - bad} identical")
    return bad


def main():
    lib = load_wick()
    seed = int(os.environ.get("WICK_TEST_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"seed {seed} (set WICK_TEST_SEED to repeat)")
    rng = np.random.default_rng(seed)
    failures = 0
    for qtype in TYPES:
        nq = nd = 0
        for n in LENGTHS:
            for label, x in make_rows(rng, n, qtype):
                ref_q = np.asarray(quants.quantize(x.reshape(1, n), qtype)).reshape(-1)
                ref_bytes = ref_q.tobytes()
                got = wick_quantize(lib, qtype, x)
                nq += 1
                if got.tobytes() != ref_bytes:
                    failures += 1
                    g = np.frombuffer(got.tobytes(), np.uint8)
                    e = np.frombuffer(ref_bytes, np.uint8)
                    at = int(np.nonzero(g != e)[0][0]) if g.size == e.size else -1
                    print(f"FAIL quantize {qtype.name} n={n} {label}: first differing byte {at} "
                          f"wick {g[at] if at >= 0 else g.size} gguf {e[at] if at >= 0 else e.size}")
                    continue
                # dequantize the reference bytes with both
                raw = np.frombuffer(ref_bytes, dtype=np.uint8).reshape(1, -1)
                ref_f = np.asarray(quants.dequantize(raw, qtype), dtype=np.float32).reshape(-1)
                got_f = wick_dequantize(lib, qtype, raw.reshape(-1), n)
                nd += 1
                if not bits_equal(got_f, ref_f):
                    failures += 1
                    i = int(np.nonzero(got_f.view(np.uint32) != ref_f.view(np.uint32))[0][0])
                    print(f"FAIL dequantize {qtype.name} n={n} {label}: element {i} "
                          f"wick {got_f[i]!r} gguf {ref_f[i]!r}")
        print(f"{qtype.name}: {nq} rows quantized, {nd} dequantized, identical to gguf "
              f"unless FAIL above")
    failures += check_q8_1_fixtures(lib, os.environ.get("WICK_SOURCE_DIR", "."))
    if failures:
        print(f"{failures} mismatches")
        return 1
    print("all identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
