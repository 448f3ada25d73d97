#!/usr/bin/env python3
"""The model commands of the CLI: `wick run` streams text then prints the timing line of
SPEC section 10; `bench gen` prints its per-round lines and the text; `logits` writes
n_vocab float32 values that `diff` compares; help exits 0, usage errors 2, errors 1 with
"wick: error:"."""
import os
import re
import subprocess
import sys
import tempfile

import numpy as np

SRC = os.environ.get("WICK_SOURCE_DIR", ".")
BIN = os.environ.get("WICK_BIN", os.path.join(SRC, "build/wick"))
MODEL = os.environ.get("WICK_TEST_MODEL", os.path.join(SRC, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
TIMING = r"load \d+\.\d ms, prefill \((\d+) tokens\) \d+\.\d ms, (\d+) decode steps \d+\.\d ms \(mean \d+\.\d+ ms\)"
failures = 0


def check(cond, msg):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", msg)


def wick(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True,
                          env=dict(os.environ, WICK_NUM_THREADS="2"))


def main():
    for cmd in (["run"], ["bench", "gen"], ["logits"], ["diff"]):
        r = wick(*cmd, "--help")
        check(r.returncode == 0 and "usage: wick" in r.stdout, f"{cmd} --help: {r.returncode} {r.stdout!r}")
    r = wick("run", "--bogus")
    check(r.returncode == 2 and "unknown option '--bogus'" in r.stderr, f"bad option: {r.returncode} {r.stderr!r}")
    r = wick("run", "--temp", "hot")
    check(r.returncode == 2 and "--temp expects a number" in r.stderr, f"bad value: {r.stderr!r}")
    r = wick("run", "--matmul", "f8")
    check(r.returncode == 2 and "--matmul expects" in r.stderr, f"bad form: {r.stderr!r}")
    r = wick("run", "-m", "/nonexistent.gguf", "-p", "hi")
    check(r.returncode == 1 and r.stderr.startswith("wick: error: ") and "/nonexistent.gguf" in r.stderr,
          f"missing model: {r.returncode} {r.stderr!r}")
    r = wick("logits", "-m", MODEL)
    check(r.returncode == 2 and "-o FILE is required" in r.stderr, f"logits without -o: {r.stderr!r}")
    if not os.path.exists(MODEL):
        print(f"skip the rest: no model at {MODEL}")
        return 1 if failures else 0

    r = wick("run", "-m", MODEL, "--raw", "-p", "What is Rust?", "-n", "8", "--temp", "0")
    check(r.returncode == 0, f"run failed: {r.stderr}")
    check(r.stdout.startswith("\n\nRust is a"), f"run text {r.stdout!r}")
    m = re.fullmatch(TIMING, r.stderr.strip())
    check(m is not None and m.group(1) == "4" and m.group(2) == "7", f"timing line {r.stderr!r}")
    r = wick("run", "-m", MODEL, "--ctx", "6", "--raw", "-p", "What is Rust?", "-n", "8")
    check(r.returncode == 0 and "context of 6 tokens is full" in r.stderr, f"context stop {r.stderr!r}")
    r = wick("run", "-m", MODEL, "--ctx", "3", "--raw", "-p", "What is Rust?")
    check(r.returncode == 1 and "more than the context of 3" in r.stderr, f"long prompt {r.stderr!r}")

    r = wick("bench", "gen", "-m", MODEL, "--raw", "-n", "5", "--rounds", "2", "--label", "t")
    lines = r.stdout.splitlines()
    check(r.returncode == 0 and len(lines) == 3, f"bench gen: {r.returncode} {r.stdout!r} {r.stderr!r}")
    if len(lines) == 3:
        check(re.fullmatch(r"\[t round 1\] " + TIMING, lines[0]) is not None, f"round line {lines[0]!r}")
        check(lines[1].startswith('[t] text: "') and lines[1].endswith('"'), f"text line {lines[1]!r}")
        check(re.fullmatch(r"\[t round 2\] " + TIMING, lines[2]) is not None, f"round line {lines[2]!r}")

    with tempfile.TemporaryDirectory() as tmp:
        a, b, c = (os.path.join(tmp, n) for n in ("a.f32", "b.f32", "c.f32"))
        for path, form in ((a, "quantized"), (b, "quantized"), (c, "f32")):
            r = wick("logits", "-m", MODEL, "--raw", "-p", "What is Rust?", "--matmul", form, "-o", path)
            check(r.returncode == 0, f"logits {form}: {r.stderr}")
        la, lc = np.fromfile(a, "<f4"), np.fromfile(c, "<f4")
        check(la.size == 49152 and int(la.argmax()) == 198, f"logits: {la.size} values, top {la.argmax()}")
        r = wick("diff", a, b)
        check(r.returncode == 0 and r.stdout.startswith("max abs diff 0.00000\ntop token agrees: 198"),
              f"diff of equal files {r.stdout!r}")
        r = wick("diff", a, c)
        want = float(np.abs(la - lc).max())
        got = re.match(r"max abs diff (\d+\.\d+)", r.stdout)
        check(got is not None and abs(float(got.group(1)) - want) < 1e-4, f"diff {r.stdout!r} want {want}")
        with open(c, "ab") as f:
            f.write(b"\0\0\0\0")
        r = wick("diff", a, c)
        check(r.returncode == 1 and "49152 values" in r.stderr and "49153" in r.stderr, f"size mismatch {r.stderr!r}")
    print("ok" if failures == 0 else f"{failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
