"""Every tensor of the default model, dequantized by wick, equals the gguf package's
dequantization element for element, bit for bit.

The file is read with the gguf package's own reader (not wick's), and each tensor's bytes
are handed to wk_dequantize_row as one run of whole rows (blocks never cross rows, so
the tensor is a valid multiple of the block size). Q4_1 is d*q + m: wick and numpy both
round the product and the sum separately (no fused multiply-add), so no last-bit
allowance is needed; a mismatch is reported with its largest distance in ulps.

Run as a script: exits non-zero on any mismatch or a type wick cannot decode.
Env: WICK_LIB (libwick.so), WICK_TEST_MODEL (the .gguf file).
"""
import os
import sys
import time

import numpy as np
from gguf import GGUFReader
from gguf import quants

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from test_quant_legacy import load_wick, wick_dequantize  # noqa: E402


def main():
    model = os.environ.get("WICK_TEST_MODEL", "models/SmolLM2-135M-Instruct.Q4_1.gguf")
    if not os.path.exists(model):
        print(f"model not found: {model} (set WICK_TEST_MODEL or run scripts/fetch-model.sh)")
        return 1
    lib = load_wick()
    t0 = time.time()
    reader = GGUFReader(model)
    exact = 0
    failed = []
    by_type = {}
    for t in reader.tensors:
        qtype = t.tensor_type
        n = int(t.n_elements)
        ref = np.ascontiguousarray(quants.dequantize(t.data, qtype), dtype=np.float32).reshape(-1)
        got = wick_dequantize(lib, qtype, np.ascontiguousarray(t.data).view(np.uint8), n)
        a, b = got.view(np.int32), ref.view(np.int32)
        if ref.size == n and np.array_equal(a, b):
            exact += 1
            by_type[qtype.name] = by_type.get(qtype.name, 0) + 1
            continue
        if ref.size != n:
            failed.append(f"{t.name} ({qtype.name}): gguf gave {ref.size} values for {n} elements")
            continue
        diff = np.nonzero(a != b)[0]
        # distance in ulps between same-sign floats (bits as ordered integers)
        ulps = np.abs(a[diff].astype(np.int64) - b[diff].astype(np.int64)).max()
        i = int(diff[0])
        failed.append(f"{t.name} ({qtype.name}): {diff.size} of {n} elements differ, up to "
                      f"{ulps} ulp; first at {i}: wick {got[i]!r} gguf {ref[i]!r}")
    for line in failed:
        print("FAIL", line)
    summary = ", ".join(f"{k} {v}" for k, v in sorted(by_type.items()))
    print(f"{exact} of {len(reader.tensors)} tensors dequantized bit-identically to gguf "
          f"({summary}) in {time.time() - t0:.1f} s")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
