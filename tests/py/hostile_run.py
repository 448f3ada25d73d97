"""Running the wick CLI on hostile input: shared by test_hostile_models.py and
test_cli_errors.py.

run(args) runs WICK_BIN with a timeout and returns (status, stdout, stderr); the
checks below fail a case with a message that shows the command and its output.
A case never passes if wick was killed by a signal, hung, or reported a sanitizer
error, whatever its expected status.
"""
import os
import subprocess
import sys

WICK = os.environ.get("WICK_BIN", "build/wick")
SOURCE = os.environ.get("WICK_SOURCE_DIR", ".")
MODEL = os.environ.get("WICK_TEST_MODEL", os.path.join(SOURCE,
                                                       "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
TIMEOUT = float(os.environ.get("WICK_TEST_TIMEOUT", "180"))
SANITIZER_MARKS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "ThreadSanitizer")


class Failure(Exception):
    pass


def run(args, stdin=None, env=None):
    """wick ARGS -> (status, stdout bytes, stderr text). Arguments may be bytes."""
    e = dict(os.environ)
    e.setdefault("WICK_NUM_THREADS", "2")
    if env:
        e.update(env)
    try:
        p = subprocess.run([WICK] + list(args), input=stdin, capture_output=True,
                           timeout=TIMEOUT, env=e)
    except subprocess.TimeoutExpired:
        raise Failure(f"wick {show(args)}: no answer within {TIMEOUT:.0f} s (a hang)")
    err = p.stderr.decode("utf-8", "replace")
    if p.returncode < 0 or p.returncode >= 128:
        raise Failure(f"wick {show(args)}: killed by signal {-p.returncode} "
                      f"(status {p.returncode})\n{tail(err)}")
    for mark in SANITIZER_MARKS:
        if mark in err:
            raise Failure(f"wick {show(args)}: sanitizer report\n{tail(err, 40)}")
    return p.returncode, p.stdout, err


def show(args):
    return " ".join(a.decode("utf-8", "backslashreplace") if isinstance(a, bytes) else a
                    for a in args)


def tail(text, n=12):
    lines = text.rstrip().splitlines()
    return "\n".join("    " + line for line in lines[-n:])


def expect(args, status, *substrings, **kw):
    """wick ARGS must exit with status; for 1, stderr must have a 'wick: error: ' line;
    for 2, a usage line 'wick: ... (see --help)'; every substring must appear in stderr."""
    rc, out, err = run(args, **kw)
    if rc != status:
        raise Failure(f"wick {show(args)}: exit {rc}, expected {status}\n{tail(err)}")
    if status == 1 and "wick: error: " not in err:
        raise Failure(f"wick {show(args)}: exit 1 without a 'wick: error: ' line\n{tail(err)}")
    if status == 2 and not any(line.startswith("wick: ") and "(see --help)" in line
                               for line in err.splitlines()):
        raise Failure(f"wick {show(args)}: exit 2 without a usage line\n{tail(err)}")
    for s in substrings:
        if s not in err:
            raise Failure(f"wick {show(args)}: message lacks {s!r}\n{tail(err)}")
    return rc, out, err


def error_line(err):
    for line in err.splitlines():
        if line.startswith("wick: "):
            return line
    return err.strip().splitlines()[-1] if err.strip() else ""


def run_is_built():
    """False while `wick run` is the placeholder of an unfinished build."""
    rc, _, err = run(["run", "--help"])
    return not (rc == 1 and "not built yet" in err)


class Suite:
    """Named cases; failures are collected, reported, and make the exit status 1."""

    def __init__(self, name):
        self.name = name
        self.failed = []
        self.passed = 0
        self.skipped = []

    def case(self, label, fn, *args, **kw):
        try:
            result = fn(*args, **kw)
            self.passed += 1
            note = f": {result}" if isinstance(result, str) and result else ""
            print(f"ok   {label}{note}")
        except Failure as f:
            self.failed.append(label)
            print(f"FAIL {label}: {f}")

    def skip(self, label, why):
        self.skipped.append(label)
        print(f"skip {label}: {why}")

    def finish(self):
        print(f"{self.name}: {self.passed} passed, {len(self.failed)} failed, "
              f"{len(self.skipped)} skipped")
        if self.failed:
            print("failed: " + ", ".join(self.failed))
        sys.exit(1 if self.failed else 0)
