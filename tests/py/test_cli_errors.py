"""Bad prompts, options and model files on the command line: clear errors or the
documented behaviour, never a crash.

SPEC 10: errors go to stderr as `wick: error: ...` with exit status 1; usage errors
(an unknown option, a bad number, a missing value) exit 2 with a usage line. For
each case: the exit status, the line, and the words it must contain. Documented
behaviours: invalid UTF-8 in a prompt is tokenized as bytes; -n beyond the context
stops when the context is full (and says so); an empty chat prompt still renders
the template. No case may end by a signal, hang, or trip a sanitizer.

Run as a script; env WICK_BIN, WICK_TEST_MODEL, WICK_SOURCE_DIR. Exits non-zero on
any failure.
"""
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_run import MODEL, Failure, Suite, error_line, expect, run, run_is_built, tail  # noqa: E402

FAST = ["-t", "2"]


def usage(args, *words):
    _, _, err = expect(args, 2, *words)
    return error_line(err)


def error(args, *words):
    _, _, err = expect(args, 1, *words)
    return error_line(err)


def runs(args, *words):
    rc, out, err = run(args)
    if rc != 0:
        raise Failure(f"exit {rc}, expected 0\n{tail(err)}")
    for w in words:
        if w not in err:
            raise Failure(f"stderr lacks {w!r}\n{tail(err)}")
    return f"{len(out)} bytes out"


def prompt_utf8_invalid():
    """Bytes that are not UTF-8 are tokenized as bytes (byte-level BPE) and run."""
    return runs(["run", "-m", MODEL, "--raw", "-p", b"caf\xe9 \xff\xfe\xc3(", "-n", "4"] + FAST,
                "decode steps")


def prompt_too_long():
    long_prompt = "word " * 400
    return error(["run", "-m", MODEL, "--ctx", "64", "--raw", "-p", long_prompt, "-n", "4"] + FAST,
                 "context", "64")


def n_beyond_context():
    """-n larger than the context: generation stops when the context is full, and says so."""
    return runs(["run", "-m", MODEL, "--ctx", "40", "--raw", "-p", "Once upon a time", "-n", "500",
                 "--temp", "0"] + FAST, "context of 40 tokens is full", "decode steps")


def cuda_without_gpu():
    rc, _, err = run(["run", "-m", MODEL, "--device", "cuda", "-p", "hi", "-n", "2"])
    if rc == 0:
        return "a GPU is present: ran"
    if rc != 1 or "wick: error: " not in err:
        raise Failure(f"exit {rc}\n{tail(err)}")
    line = error_line(err).lower()
    if "cuda" not in line and "gpu" not in line and "device" not in line:
        raise Failure(f"the message does not say CUDA/GPU/device: {line}")
    return error_line(err)


def too_many_threads():
    rc, _, err = run(["run", "-m", MODEL, "-p", "hi", "-n", "2", "-t", "2000"])
    if rc not in (1, 2) or "2000" not in error_line(err):
        raise Failure(f"exit {rc}\n{tail(err)}")
    return error_line(err)


def bench_both_dtypes():
    """--x f32,f16: every form checked and timed with both inputs; the f16 line carries the ratios."""
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "t.csv")
        rc, out, err = run(["bench", "matmul", "--n", "64", "--k", "256", "--types", "q4_0", "--m", "1,3",
                            "--x", "f32,f16", "--no-rotate", "--csv", path] + FAST)
        if rc != 0:
            raise Failure(f"exit {rc}\n{tail(err)}")
        text = out.decode() if isinstance(out, bytes) else out
        if text.count("x f16") != 2 or "(" not in text:
            raise Failure(f"expected an f16 line per row count\n{text}")
        rows = open(path).read().splitlines()
        if rows[0] != "type,m,form,device,threads,ms,gbps,x" or len(rows) != 1 + 2 * 4 * 2:
            raise Failure(f"csv: {rows[:3]} ... {len(rows)} lines")
        if {r.split(",")[-1] for r in rows[1:]} != {"f32", "f16"}:
            raise Failure("csv: both input dtypes expected in column x")
    return f"{len(rows) - 1} csv rows"


def runs_env(args, env):
    rc, _, err = run(args, env=env)
    if rc != 0:
        raise Failure(f"exit {rc}\n{tail(err)}")
    return "exit 0"


def threads_env_too_many():
    """An environment asking for 100000 threads: refused with the number, or capped."""
    rc, _, err = run(["run", "-m", MODEL, "-p", "hi", "-n", "2"],
                     env={"WICK_NUM_THREADS": "100000"})
    if rc == 0:
        return "exit 0 (capped)"
    if rc != 1 or "100000" not in error_line(err):
        raise Failure(f"exit {rc}\n{tail(err)}")
    return error_line(err)


def main():
    suite = Suite("test_cli_errors")
    tmp = tempfile.TemporaryDirectory(prefix="wick-cli-")
    d = tmp.name
    truncated = os.path.join(d, "truncated.gguf")
    empty = os.path.join(d, "empty.gguf")
    text = os.path.join(d, "notes.gguf")
    have_model = os.path.exists(MODEL)
    if have_model:
        with open(MODEL, "rb") as f:
            head = f.read(3_000_000)
        with open(truncated, "wb") as f:
            f.write(head)
    open(empty, "wb").close()
    with open(text, "w") as f:
        f.write("this is a text file, not a model\n" * 4)

    # ---- the command line itself (no model needed) ----
    suite.case("no command", lambda: "exit 2" if run([])[0] == 2 else (_ for _ in ()).throw(
        Failure("wick without a command did not exit 2")))
    suite.case("unknown command", usage, ["frobnicate"], "unknown command 'frobnicate'")
    suite.case("--help", lambda: "exit 0" if run(["--help"])[0] == 0 else (_ for _ in ()).throw(
        Failure("wick --help did not exit 0")))
    if not run_is_built():
        suite.skip("run", "`wick run` is not built yet")
        suite.finish()
    suite.case("run --help", lambda: "exit 0" if run(["run", "--help"])[0] == 0 else (
        _ for _ in ()).throw(Failure("wick run --help did not exit 0")))
    suite.case("unknown option", usage, ["run", "--frobnicate"], "--frobnicate")
    suite.case("-n without a value", usage, ["run", "-n"], "-n")
    suite.case("-n -5", usage, ["run", "-n", "-5"], "-n", "-5")
    suite.case("-n abc", usage, ["run", "-n", "abc"], "-n", "abc")
    suite.case("-n 1e9999", usage, ["run", "-n", "99999999999999999999999"], "-n")
    suite.case("--temp abc", usage, ["run", "--temp", "abc"], "--temp", "abc")
    suite.case("--temp -1", usage, ["run", "--temp", "-1"], "--temp")
    suite.case("--temp nan", usage, ["run", "--temp", "nan"], "--temp")
    suite.case("--top-p 0", usage, ["run", "--top-p", "0"], "--top-p")
    suite.case("--top-p 2", usage, ["run", "--top-p", "2"], "--top-p")
    suite.case("--top-k -1", usage, ["run", "--top-k", "-1"], "--top-k")
    suite.case("--seed -1", usage, ["run", "--seed", "-1"], "--seed")
    suite.case("-t 0", usage, ["run", "-t", "0"], "-t")
    suite.case("-t 100000", usage, ["run", "-t", "100000"], "-t")
    suite.case("--ctx 0", usage, ["run", "--ctx", "0"], "--ctx")
    suite.case("--device tpu", usage, ["run", "--device", "tpu"], "--device", "tpu")
    suite.case("--matmul fast", usage, ["run", "--matmul", "fast"], "--matmul", "fast")
    suite.case("--matmul auto", usage, ["run", "--matmul", "auto"], "--matmul")
    suite.case("bench matmul --x bf16", usage, ["bench", "matmul", "--x", "bf16"], "--x", "bf16")
    suite.case("bench matmul --x f32,bf16", usage, ["bench", "matmul", "--x", "f32,bf16"], "--x", "f32,bf16")
    suite.case("bench matmul --x f32,f32", usage, ["bench", "matmul", "--x", "f32,f32"], "--x", "f32,f32")
    suite.case("bench matmul, both input dtypes", bench_both_dtypes)

    # ---- model files ----
    suite.case("missing model", error, ["run", "-m", os.path.join(d, "nope.gguf"), "-p", "hi"],
               "nope.gguf", "No such file")
    suite.case("directory as model", error, ["run", "-m", d, "-p", "hi"], "not a regular file")
    suite.case("empty model file", error, ["run", "-m", empty, "-p", "hi"], "empty.gguf",
               "too small")
    suite.case("text file as model", error, ["run", "-m", text, "-p", "hi"], "notes.gguf",
               "not a GGUF file")
    suite.case("inspect a missing file", error, ["inspect", os.path.join(d, "nope.gguf")],
               "nope.gguf")
    if not have_model:
        suite.skip("prompts", f"model {MODEL} not found")
        suite.finish()
    suite.case("truncated model", error, ["run", "-m", truncated, "-p", "hi"], "truncated.gguf")

    # ---- prompts ----
    suite.case("invalid UTF-8 prompt", prompt_utf8_invalid)
    suite.case("empty raw prompt", error, ["run", "-m", MODEL, "--raw", "-p", "", "-n", "4"] + FAST,
               "prompt")
    suite.case("empty chat prompt", runs, ["run", "-m", MODEL, "--chat", "-p", "", "-n", "4"]
               + FAST, "decode steps")
    suite.case("prompt longer than the context", prompt_too_long)
    suite.case("-n larger than the context", n_beyond_context)
    suite.case("-n 0", runs, ["run", "-m", MODEL, "-p", "hi", "-n", "0"] + FAST)
    suite.case("special-token text in a raw prompt",
               runs, ["run", "-m", MODEL, "--raw", "-p", "<|im_end|><|im_start|>", "-n", "4"] + FAST)
    suite.case("--device cuda without a GPU", cuda_without_gpu)
    suite.case("-t 2000 (more threads than the pool allows)", too_many_threads)
    suite.case("WICK_NUM_THREADS=abc", lambda: runs_env(
        ["run", "-m", MODEL, "-p", "hi", "-n", "2"], {"WICK_NUM_THREADS": "abc"}))
    suite.case("WICK_NUM_THREADS=100000", threads_env_too_many)
    tmp.cleanup()
    suite.finish()


if __name__ == "__main__":
    main()
