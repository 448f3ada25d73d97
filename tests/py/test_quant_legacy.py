"""wick's 32-element and dense formats against the gguf Python package, byte for byte.

For Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, BF16 and F16, on freshly drawn rows (normal, uniform,
heavy outliers, all-zero, exact rounding ties, tiny values, -0.0, half-range extremes) of
256, 768 and 1536 elements: wk_quantize_row must write exactly gguf.quants.quantize's bytes,
and wk_dequantize_row must give exactly gguf.quants.dequantize's floats (compared as bits).
Q8_1 is not in the gguf package: tests/test_quant_legacy_ggml.c checks it (and the others)
against committed fixtures from ggml's reference code.

Run as a script: exits non-zero on any mismatch. Env: WICK_LIB (libwick.so),
WICK_TEST_SEED (optional, else random and printed).
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


def fma_block(rng, qtype, symmetric, top, off):
    """One block for fma_rows: its scale from a random max, elements at the sensitive points
    where one exists near them. Returns the block and its count of sensitive elements."""
    f32 = np.float32
    m = f32(rng.uniform(0.5, 4.0))
    if symmetric:
        m = m if rng.random() < 0.5 else -m
        d = m / f32(-top)
    else:
        d = (m - f32(0)) / f32(top)
    inv = f32(1) / d
    blk = np.empty(32, dtype=np.float32)
    hits = 0
    pos = rng.choice(32, 2, replace=False)  # where the max (and, affine, the min 0) go
    for j in range(32):
        if j in pos:
            continue
        # affine: only products just below 1/2 can be sensitive; mix in other codes too
        k = int(rng.integers(top // 2, top)) if symmetric else int(rng.integers(0, top)) * (j % 2)
        target = -(k + 0.5) if symmetric else k + 0.5
        x0 = f32(target / float(inv))
        blk[j] = x0
        cand = x0
        for _ in range(3):
            cand = np.nextafter(cand, f32(-np.inf))
        for _ in range(7):
            exact = float(cand) * float(inv)  # exact: 24 + 24 bits fit a double
            fused = int(np.trunc(f32(exact + float(off))))
            unfused = int(np.trunc(f32(cand * inv) + off))
            if fused != unfused and (symmetric or cand > 0):
                blk[j] = cand
                hits += 1
                break
            cand = np.nextafter(cand, f32(np.inf))
    blk[pos[0]] = m
    blk[pos[1]] = 0.0 if not symmetric else m / f32(2)
    return blk, hits


def fma_rows(rng, n, qtype):
    """Rows where contracting (x - min)*id + offset into a fused multiply-add changes codes.

    The references round the product, then the sum. Here the product's exact value lies
    just off a point where the sum is an integer, and the two roundings land on that integer
    while the single fused rounding does not (so trunc gives one less). For Q4_0/Q5_0
    (offset 8.5, 16.5) that happens with negative products just below -(k + 1/2); for
    Q4_1/Q5_1 (offset 0.5, min = 0 here so x - min = x exactly) with products just below
    1/2, where the sum 1 - tiny rounds to an even 1 in two steps. Q8_0 has no add.
    Returns the row and how many of its elements are fusion-sensitive."""
    symmetric = qtype in (T.Q4_0, T.Q5_0)
    top = {T.Q4_0: 8, T.Q5_0: 16, T.Q4_1: 15, T.Q5_1: 31}[qtype]
    f32 = np.float32
    off = f32(top + 0.5) if symmetric else f32(0.5)
    x = np.empty(n, dtype=np.float32)
    sensitive = 0
    for b in range(n // 32):
        for _attempt in range(200):  # redraw the block's scale until one element is sensitive
            blk, hits = fma_block(rng, qtype, symmetric, top, off)
            if hits:
                break
        sensitive += hits
        x[b * 32:(b + 1) * 32] = blk
    return x, sensitive


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
    if qtype in (T.Q4_0, T.Q5_0, T.Q4_1, T.Q5_1):
        row, sensitive = fma_rows(rng, n, qtype)
        assert sensitive > 0, "no fusion-sensitive element was constructed"
        rows.append((f"fma-sensitive ({sensitive} elements)", row))
    return rows


def bits_equal(a, b):
    a = np.ascontiguousarray(a, dtype=np.float32)
    b = np.ascontiguousarray(b, dtype=np.float32)
    return a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32))


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
                with np.errstate(over="ignore"):  # F16 rows that overflow to inf on purpose
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
    if failures:
        print(f"{failures} mismatches")
        return 1
    print("all identical")
    return 0


if __name__ == "__main__":
    sys.exit(main())
