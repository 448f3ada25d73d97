#!/usr/bin/env python3
"""wick's Llama forward against llama.cpp (fixtures made by scripts/gen-model-fixtures.py
with llama-cpp-python on the same GGUF files):

- the prompt's token ids are llama.cpp's;
- first-step logits (quantized form) within a bound of llama.cpp's at its top 100 tokens
  (equal on an AVX2 machine for Q4_1 and Q8_0; see EXACT_BOUND), and the same top token
  unless llama.cpp's first two are a near-tie;
- greedy continuations of 32 tokens equal llama.cpp's on at least 10 of the 12 prompts of
  each file (on an AVX2 machine), and elsewhere part only at a near-tie: a step where
  llama.cpp's own first and second logits are closer than NEAR_TIE (rounding of the
  quantized activations can then turn either way; wick's f32 and precise forms, which do
  not round activations, pick the other token at such steps as often as not);
and on the default model alone:
- the f32 form and the precise form give the same logits within 1e-3;
- sampling with a seed is reproducible, and another seed changes the text;
- the thread count (1 or 2) does not change the greedy text.

Fixtures of files that `wick quantize` makes from the default model (Q8_0, Q4_K_M) are
checked after making the file and confirming its SHA-256; skipped when the tool fails.
"""
import glob
import hashlib
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from wick_model_ctypes import Lib, Model  # noqa: E402

# On an x86-64 machine with AVX2 and FMA, wick's quantized form follows llama.cpp's CPU
# rounding (activations quantized as it does at run time, its kernels' order of float
# operations, its exp, RoPE and attention orders), so the first-step logits are llama.cpp's
# bit for bit on Q4_1 and Q8_0 files. On the Q4_K_M file they are too for prompts under 8
# tokens; from 8 tokens on llama.cpp runs Q6_K through another path whose order wick does
# not reproduce, and the last-bit differences grow to 0.74 (measured on these fixtures).
# Elsewhere (no AVX2, or WICK_CPU_ISA=scalar) both still quantize activations to 8 bits but
# round differently: 1.0 bounds the measured 0.55-0.85. (The fixtures keep 5 decimals, so
# "equal" reads as within 1e-5.)
EXACT_BOUND = {"SmolLM2-135M-Instruct.Q4_1.gguf": 1e-5, "SmolLM2-135M-Instruct.Q8_0.gguf": 1e-5,
               "SmolLM2-135M-Instruct.Q4_K_M.gguf": 0.8}
LOGITS_BOUND = 1.0
# Greedy continuations equal to llama.cpp's on at least this many of the 12 prompts per
# file (measured with the llama.cpp-order path: Q4_1 12, Q8_0 12, Q4_K_M 10).
MIN_GREEDY_EQUAL = 10
# Where greedy continuations parted, llama.cpp's margin between its first two logits was at
# most 0.22 (measured on the three files: Q4_1 0.004-0.09, Q8_0 0.017-0.217, Q4_K_M 0.03-0.17).
NEAR_TIE = 0.25


def llama_order_path():
    """Does this machine run the llama.cpp-order kernels (AVX2 and FMA, ISA not lowered)?"""
    if os.environ.get("WICK_CPU_ISA", "") == "scalar":
        return False
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split() for line in f if line.startswith("flags")), [])
    except OSError:
        return False
    return "avx2" in flags and "fma" in flags


SRC = os.environ.get("WICK_SOURCE_DIR", ".")
LIB = os.environ.get("WICK_LIB", os.path.join(SRC, "build/libwick.so"))
BIN = os.environ.get("WICK_BIN", os.path.join(SRC, "build/wick"))
DEFAULT_MODEL = os.environ.get("WICK_TEST_MODEL",
                               os.path.join(SRC, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))

failures = 0


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", msg)


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def model_for(doc, tmp):
    """The file a fixture was made from: the default model, or its requantization."""
    if doc["model"] == os.path.basename(DEFAULT_MODEL):
        return DEFAULT_MODEL
    qtype = doc.get("quantize")
    if not qtype:
        return None
    out = os.path.join(tmp, doc["model"])
    r = subprocess.run([BIN, "quantize", DEFAULT_MODEL, out, qtype], capture_output=True, text=True)
    if r.returncode != 0:
        print(f"skip {doc['model']}: wick quantize failed: {r.stderr.strip()}")
        return None
    if sha256(out) != doc["sha256"]:
        print(f"skip {doc['model']}: the quantized file is not the one the fixture was made from")
        return None
    return out


def check_fixture(lib, path, doc):
    worst, top_ok, exact, near_tie, parted = 0.0, 0, 0, 0, []
    strict = llama_order_path()
    bound = EXACT_BOUND.get(doc["model"], LOGITS_BOUND) if strict else LOGITS_BOUND
    with Model(lib, path, form="quantized", threads=2) as m:
        for c in doc["cases"]:
            name = f"{doc['model']} {c['text'][:30]!r}"
            ids = m.tokenize(c["text"], c["special"])
            check(ids == c["ids"], f"{name}: ids {ids} != llama.cpp {c['ids']}")
            logits = m.logits(c["ids"], doc["n_vocab"])
            top = np.array(c["top"])
            diff = float(np.abs(logits[top[:, 0].astype(int)] - top[:, 1]).max())
            worst = max(worst, diff)
            check(diff <= bound, f"{name}: logits differ by {diff:.4f} > {bound}")
            agree = int(np.argmax(logits)) == int(top[0, 0])
            top_ok += agree
            check(agree or c["gaps"][0] < NEAR_TIE,
                  f"{name}: top token {int(np.argmax(logits))} != llama.cpp {int(top[0, 0])} "
                  f"(llama.cpp's margin {c['gaps'][0]})")
            got, _, _ = m.generate(c["ids"], len(c["greedy"]))
            if got == c["greedy"]:
                exact += 1
                continue
            i = next(i for i, (a, b) in enumerate(zip(got, c["greedy"])) if a != b) \
                if any(a != b for a, b in zip(got, c["greedy"])) else min(len(got), len(c["greedy"]))
            gap = c["gaps"][i] if i < len(c["gaps"]) else 0.0
            near_tie += gap < NEAR_TIE
            parted.append(f"{i}:{gap}")
            check(gap < NEAR_TIE,
                  f"{name}: greedy parts at step {i} where llama.cpp's margin is {gap} "
                  f"(wick {got[i:i+4]}, llama.cpp {c['greedy'][i:i+4]})")
    if strict:
        check(exact >= MIN_GREEDY_EQUAL,
              f"{doc['model']}: greedy equal on {exact} prompts, fewer than {MIN_GREEDY_EQUAL}")
    print(f"{doc['model']}: logits max diff {worst:.4f} (bound {bound}), top token equal "
          f"{top_ok}/{len(doc['cases'])}, greedy equal {exact}/{len(doc['cases'])}, "
          f"parted at a near-tie {near_tie} (step:llama.cpp margin {' '.join(parted)})")


def check_default_model(lib):
    prompts = [[1780, 314, 36828, 47], [504, 3575, 282, 4649, 314]]
    with Model(lib, DEFAULT_MODEL, form="f32", threads=2) as f32, \
            Model(lib, DEFAULT_MODEL, form="precise", threads=2) as precise:
        for ids in prompts:
            d = float(np.abs(f32.logits(ids, 49152) - precise.logits(ids, 49152)).max())
            print(f"f32 vs precise {ids}: max abs diff {d:.2e}")
            check(d <= 1e-3, f"f32 vs precise logits differ by {d} for {ids}")
    ids = prompts[0]
    with Model(lib, DEFAULT_MODEL, threads=2) as m2, Model(lib, DEFAULT_MODEL, threads=1) as m1:
        a, ta, _ = m2.generate(ids, 24, temperature=0.9, top_k=40, top_p=0.95, seed=1234)
        b, tb, _ = m2.generate(ids, 24, temperature=0.9, top_k=40, top_p=0.95, seed=1234)
        c, _, _ = m2.generate(ids, 24, temperature=0.9, top_k=40, top_p=0.95, seed=99)
        check(a == b and ta == tb, f"same seed, different tokens: {a} vs {b}")
        check(a != c, f"seeds 1234 and 99 gave the same 24 tokens {a}")
        g1, t1, _ = m1.generate(ids, 32)
        g2, t2, _ = m2.generate(ids, 32)
        check(g1 == g2, f"greedy text differs with 1 and 2 threads: {t1!r} vs {t2!r}")
        print(f"seeded sampling reproducible; threads 1 and 2 give {t1[:60]!r}")


def main():
    if not os.path.exists(DEFAULT_MODEL):
        print(f"skip: no model at {DEFAULT_MODEL}")
        return 0
    lib = Lib(LIB)
    with tempfile.TemporaryDirectory() as tmp:
        for fx in sorted(glob.glob(os.path.join(SRC, "tests/fixtures/model/*.json"))):
            with open(fx) as f:
                doc = json.load(f)
            path = model_for(doc, tmp)
            if path:
                check_fixture(lib, path, doc)
    check_default_model(lib)
    print("ok" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
