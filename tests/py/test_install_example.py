#!/usr/bin/env python3
"""`make install` gives a library, headers and wick.pc that a program can build against:
install the build into a temporary prefix, compile examples/generate.c with the flags
pkg-config gives, run it on the default model and check that it prints the greedy text."""
import os
import shutil
import subprocess
import sys
import tempfile

SRC = os.environ.get("WICK_SOURCE_DIR", ".")
BIN = os.environ.get("WICK_BIN", os.path.join(SRC, "build/wick"))
MODEL = os.environ.get("WICK_TEST_MODEL", os.path.join(SRC, "models/SmolLM2-135M-Instruct.Q4_1.gguf"))


def run(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if r.returncode != 0:
        print(f"FAIL: {' '.join(cmd)} exited {r.returncode}\n{r.stdout}\n{r.stderr}")
        sys.exit(1)
    return r.stdout


def main():
    if not shutil.which("pkg-config") or not shutil.which("cc"):
        print("skip: pkg-config or cc missing")
        return 0
    build = os.path.dirname(os.path.abspath(BIN))
    with tempfile.TemporaryDirectory() as prefix:
        run(["cmake", "--install", build, "--prefix", prefix])
        pcdirs = [os.path.join(prefix, d, "pkgconfig") for d in ("lib", "lib64", "lib/x86_64-linux-gnu")]
        env = dict(os.environ, PKG_CONFIG_PATH=":".join(pcdirs))
        # wick.pc names the configured prefix; point it at where this test installed.
        flags = run(["pkg-config", f"--define-variable=prefix={prefix}", "--cflags", "--libs",
                     "wick"], env=env).split()
        libdir = next(f[2:] for f in flags if f.startswith("-L"))
        exe = os.path.join(prefix, "generate")
        run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-parameter",
             os.path.join(SRC, "examples/generate.c"), *flags, f"-Wl,-rpath,{libdir}", "-o", exe])
        if not os.path.exists(MODEL):
            print(f"built the example; skip running it: no model at {MODEL}")
            return 0
        out = run([exe, MODEL, "What is Rust?"], env=dict(os.environ, WICK_NUM_THREADS="2"))
        print(f"example printed: {out.strip()[:80]!r}")
        if "Rust" not in out:
            print("FAIL: the example's text does not mention Rust")
            return 1
    print("ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
