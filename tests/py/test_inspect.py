"""`wick inspect`: its output on the default model against the gguf package
(every key with its type, every tensor with type, shape and bytes, the summary
of types by count), and its exit statuses: --help 0, errors 1, usage errors 2."""
import collections
import os
import subprocess
import sys
import tempfile

import gguf

VTYPE = {0: "uint8", 1: "int8", 2: "uint16", 3: "int16", 4: "uint32", 5: "int32", 6: "float32",
         7: "bool", 8: "string", 9: "array", 10: "uint64", 11: "int64", 12: "float64"}


def run(*args):
    p = subprocess.run([os.environ["WICK_BIN"], "inspect", *args], capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    model = os.environ["WICK_TEST_MODEL"]
    ref = gguf.GGUFReader(model)
    checks = 0

    rc, out, err = run(model)
    assert rc == 0, (rc, err)
    lines = out.splitlines()
    version = int(ref.fields["GGUF.version"].contents())
    assert f"GGUF version {version}, alignment {ref.alignment}, data section at offset " \
        f"{ref.data_offset}" in out, lines[:3]
    checks += 1

    fields = [f for name, f in ref.fields.items() if not name.startswith("GGUF.")]
    assert f"metadata: {len(fields)} keys" in lines
    meta = {}
    for line in lines:
        parts = line.split(None, 2)
        if line.startswith("  ") and len(parts) == 3 and parts[0] in ref.fields:
            meta[parts[0]] = (parts[1], parts[2])
    for f in fields:
        types = [int(t) for t in f.types]
        want = VTYPE[types[0]] if types[0] != 9 else f"array[{VTYPE[types[1]]}]"
        assert meta[f.name][0] == want, (f.name, meta[f.name], want)
        if types[0] == 9:
            n = len(f.data)
            assert meta[f.name][1].endswith(f"({n} element{'s' if n != 1 else ''})"), meta[f.name]
        elif types[0] in (4, 5, 10, 11):
            assert meta[f.name][1] == str(f.contents()), (f.name, meta[f.name])
        checks += 1

    assert f"tensors: {len(ref.tensors)} (shape in GGUF order: ne[0], the row length, first)" \
        in lines
    rows = {}
    for line in lines:
        parts = line.split()
        if len(parts) >= 6 and parts[0].isdigit() and parts[-1].isdigit():
            shape = line[line.index("["): line.index("]") + 1]
            rows[parts[1]] = (parts[2], shape, int(parts[-2]), int(parts[-1]))
    assert len(rows) == len(ref.tensors)
    base = ref.data_offset
    for t in ref.tensors:
        typ, shape, nbytes, offset = rows[t.name]
        assert typ == t.tensor_type.name, (t.name, typ)
        assert shape == "[" + ", ".join(str(int(x)) for x in t.shape) + "]", (t.name, shape)
        assert nbytes == t.n_bytes and base + offset == t.data_offset, t.name
        checks += 1

    counts = collections.Counter(t.tensor_type.name for t in ref.tensors)
    order = sorted(counts.items(), key=lambda kv: (-kv[1], int(gguf.GGMLQuantizationType[kv[0]])))
    summary = "summary: " + ", ".join(f"{k}: {v}" for k, v in order)
    assert summary in lines, (summary, lines[-6:])
    # the default model: 210 Q4_1 matrices, 61 f32 norms, a Q8_0 embedding
    if os.path.basename(model) == "SmolLM2-135M-Instruct.Q4_1.gguf":
        assert summary == "summary: Q4_1: 210, F32: 61, Q8_0: 1", summary
    total = sum(t.n_bytes for t in ref.tensors)
    assert any(line.split()[:5] == ["total", str(len(ref.tensors)), "tensors", str(total), "bytes"]
               for line in lines), lines[-2:]
    checks += 3

    rc, out, err = run("--help")
    assert rc == 0 and out.startswith("usage: wick inspect MODEL"), (rc, out)
    rc, out, err = run()
    assert rc == 2 and err.startswith("wick: inspect: MODEL is missing"), (rc, err)
    rc, out, err = run("--bogus", model)
    assert rc == 2 and "unknown option '--bogus'" in err, (rc, err)
    rc, out, err = run(model, model)
    assert rc == 2 and "one MODEL only" in err, (rc, err)
    rc, out, err = run("/nonexistent/model.gguf")
    assert rc == 1 and err == "wick: error: /nonexistent/model.gguf: cannot open: " \
        "No such file or directory\n", (rc, err)
    with tempfile.TemporaryDirectory() as tmp:
        cut = os.path.join(tmp, "cut.gguf")
        with open(model, "rb") as f, open(cut, "wb") as g:
            g.write(f.read(100000))
        rc, out, err = run(cut)
        assert rc == 1 and err.startswith(f"wick: error: {cut}: key 'tokenizer.ggml.tokens': "), \
            (rc, err)
        assert out == "", out
    checks += 6
    print(f"test_inspect.py: {checks} checks passed")


if __name__ == "__main__":
    sys.exit(main())
