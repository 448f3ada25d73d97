"""`wick quantize` on the default model, read back with the gguf package:
 - q8_0 and q4_k_m outputs: every tensor's type against llama.cpp's rules (restated
   here independently: use_more_bits layers, tied embedding, row-length fallbacks);
 - every output tensor dequantized by wick (libwick) equals the gguf package's
   dequantization bit for bit, and stays close to the input's values;
 - tensors already in their target type are copied byte for byte;
 - metadata: every input key copied unchanged except general.file_type and
   general.quantization_version, set as llama.cpp sets them;
 - rejections: unknown type, missing input, output == input, bad arguments;
 - when llama-cpp-python is importable (not in CI): llama.cpp's own
   llama_model_quantize writes the same tensor bytes.
"""
import ctypes
import os
import subprocess
import sys
import tempfile

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T

WICK = os.environ["WICK_BIN"]
MODEL = os.environ["WICK_TEST_MODEL"]

# llama.cpp's general.file_type values
FILE_TYPE = {"q8_0": 7, "q4_k_m": 15}
# largest relative RMS error (vs the input's values) accepted per output type
MAX_REL_RMSE = {T.F32: 0.0, T.Q8_0: 0.02, T.Q6_K: 0.05, T.Q5_0: 0.12, T.Q4_K: 0.2}


def run(*args):
    return subprocess.run([WICK, *args], capture_output=True, text=True)


def use_more_bits(i, n):
    # C's remainder: (i - n/8) % 3 is negative below n/8
    d = i - n // 8
    return i < n // 8 or i >= 7 * n // 8 or (d - 3 * int(d / 3)) == 2


def fallback(t, ne0):
    table = {T.Q2_K: T.Q4_0, T.Q3_K: T.Q4_0, T.Q4_K: T.Q5_0, T.Q5_K: T.Q5_1, T.Q6_K: T.Q8_0}
    block = gguf.GGML_QUANT_SIZES[t][0]
    if ne0 % block == 0:
        return t
    f = table.get(t, T.F16)
    return f if ne0 % gguf.GGML_QUANT_SIZES[f][0] == 0 else T.F16


def is_weight_matrix(t):
    dims = [int(x) for x in t.shape]
    n_dims = max([1] + [i + 1 for i, d in enumerate(dims) if d > 1])
    return n_dims >= 2 and t.name.endswith("weight") and "_norm.weight" not in t.name


def expected_types(reader, request):
    """name -> type, by llama.cpp's rules."""
    tensors = list(reader.tensors)
    names = {t.name for t in tensors}
    arch = bytes(reader.fields["general.architecture"].parts[-1]).decode()
    n_layer = int(reader.fields[arch + ".block_count"].contents())
    tied = "output.weight" not in names

    def order(t):
        layer = int(t.name.split(".")[1]) if t.name.startswith("blk.") else -1
        return (layer, t.name)

    out = {}
    i_v = i_down = 0
    n_v = sum("attn_v.weight" in t.name for t in tensors)
    for t in sorted(tensors, key=order):
        if not is_weight_matrix(t):
            out[t.name] = t.tensor_type
            continue
        ne0 = int(t.shape[0])
        if request == "q8_0":
            want = T.Q8_0
        else:
            want = T.Q4_K
            if t.name == "output.weight" or (tied and t.name == "token_embd.weight"):
                want = T.Q8_0 if ne0 % 256 else T.Q6_K
            elif "attn_v.weight" in t.name:
                want = T.Q6_K if use_more_bits(i_v, n_v) else want
                i_v += 1
            elif "ffn_down" in t.name:
                want = T.Q6_K if use_more_bits(i_down, n_layer) else want
                i_down += 1
        out[t.name] = fallback(want, ne0)
    return out


def wick_dequantize(lib, ttype, raw, n):
    y = np.empty(n, dtype=np.float32)
    src = np.ascontiguousarray(raw)
    st = lib.wk_dequantize_row(int(ttype), src.ctypes.data_as(ctypes.c_void_p),
                               y.ctypes.data_as(ctypes.c_void_p), ctypes.c_int64(n))
    assert st == 0, lib.wk_last_error()
    return y


def field_value(f):
    return [bytes(f.parts[i]) for i in f.data], list(f.types)


def check_output(lib, src, path, request):
    out = gguf.GGUFReader(path)
    checks = 0
    # metadata
    src_fields = {k: f for k, f in src.fields.items() if not k.startswith("GGUF.")}
    out_fields = {k: f for k, f in out.fields.items() if not k.startswith("GGUF.")}
    assert set(out_fields) == set(src_fields) | {"general.quantization_version"}, \
        set(out_fields) ^ set(src_fields)
    for k, f in src_fields.items():
        if k in ("general.file_type", "general.quantization_version"):
            continue
        assert field_value(out_fields[k]) == field_value(f), k
        checks += 1
    assert int(out_fields["general.file_type"].contents()) == FILE_TYPE[request]
    assert int(out_fields["general.quantization_version"].contents()) == 2
    checks += 2

    # types, values
    want = expected_types(src, request)
    src_t = {t.name: t for t in src.tensors}
    counts = {}
    assert len(out.tensors) == len(src.tensors)
    for t in out.tensors:
        s = src_t[t.name]
        assert [int(x) for x in t.shape] == [int(x) for x in s.shape], t.name
        assert t.tensor_type == want[t.name], (t.name, t.tensor_type.name, want[t.name].name)
        counts[t.tensor_type.name] = counts.get(t.tensor_type.name, 0) + 1
        if t.tensor_type == s.tensor_type:
            assert bytes(t.data.tobytes()) == bytes(s.data.tobytes()), t.name
            checks += 2
            continue
        n = int(np.prod([int(x) for x in t.shape]))
        ref = np.asarray(gguf.quants.dequantize(t.data, t.tensor_type), dtype=np.float32).reshape(-1)
        got = wick_dequantize(lib, t.tensor_type, t.data, n)
        assert np.array_equal(got.view(np.uint32), ref.view(np.uint32)), \
            (t.name, t.tensor_type.name, np.flatnonzero(got != ref)[:5])
        orig = np.asarray(gguf.quants.dequantize(s.data, s.tensor_type), dtype=np.float64).reshape(-1)
        rel = np.sqrt(np.mean((ref - orig) ** 2)) / max(np.sqrt(np.mean(orig ** 2)), 1e-30)
        assert rel <= MAX_REL_RMSE[t.tensor_type], (t.name, t.tensor_type.name, rel)
        checks += 3
    print("%s: %s" % (request, " ".join("%s %d" % kv for kv in sorted(counts.items()))))
    return out, checks


def check_against_llama_cpp(path, request):
    """Only where llama-cpp-python is installed (a developer machine, not CI)."""
    try:
        import llama_cpp
    except ImportError:
        print("llama-cpp-python not importable: llama.cpp cross-check skipped")
        return 0
    with tempfile.TemporaryDirectory() as d:
        ref_path = os.path.join(d, "llama.gguf")
        p = llama_cpp.llama_model_quantize_default_params()
        p.ftype = FILE_TYPE[request]
        p.allow_requantize = True
        p.nthread = 2
        assert llama_cpp.llama_model_quantize(MODEL.encode(), ref_path.encode(), ctypes.byref(p)) == 0
        ref = {t.name: t for t in gguf.GGUFReader(ref_path).tensors}
        for t in gguf.GGUFReader(path).tensors:
            r = ref[t.name]
            assert t.tensor_type == r.tensor_type, (t.name, t.tensor_type.name, r.tensor_type.name)
            assert bytes(t.data.tobytes()) == bytes(r.data.tobytes()), (t.name, t.tensor_type.name)
        print("%s: tensor bytes identical to llama.cpp's llama_model_quantize" % request)
        return len(ref)


def main():
    lib = ctypes.CDLL(os.environ["WICK_LIB"])
    lib.wk_last_error.restype = ctypes.c_char_p
    lib.wk_dequantize_row.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
    lib.wk_dequantize_row.restype = ctypes.c_int
    src = gguf.GGUFReader(MODEL)
    checks = 0
    with tempfile.TemporaryDirectory() as d:
        for request in ("q8_0", "q4_k_m"):
            path = os.path.join(d, request + ".gguf")
            r = run("quantize", MODEL, path, request)
            assert r.returncode == 0, r.stderr
            assert ("wrote " + path) in r.stdout, r.stdout
            out, n = check_output(lib, src, path, request)
            checks += n
            if request == "q4_k_m":
                # the default model: 576-wide rows fall back, 1536-wide ffn_down do not
                types = {t.name: t.tensor_type for t in out.tensors}
                assert types["token_embd.weight"] == T.Q8_0
                assert types["blk.0.attn_q.weight"] == T.Q5_0
                assert types["blk.0.attn_v.weight"] == T.Q8_0
                assert types["blk.3.attn_v.weight"] == T.Q5_0
                assert types["blk.0.ffn_down.weight"] == T.Q6_K
                assert types["blk.3.ffn_down.weight"] == T.Q4_K
                checks += 6
            if os.environ.get("WICK_TEST_LLAMA_CPP", "1") != "0":
                checks += check_against_llama_cpp(path, request)

        # rejections
        r = run("quantize", MODEL, os.path.join(d, "x.gguf"), "q9_k")
        assert r.returncode == 2 and "unknown quantization type 'q9_k'" in r.stderr, r.stderr
        r = run("quantize", os.path.join(d, "missing.gguf"), os.path.join(d, "x.gguf"), "q8_0")
        assert r.returncode == 1 and r.stderr.startswith("wick: error:") and "missing.gguf" in r.stderr, r.stderr
        q8 = os.path.join(d, "q8_0.gguf")
        r = run("quantize", q8, q8, "q4_0")
        assert r.returncode == 1 and "is the input file" in r.stderr, r.stderr
        r = run("quantize", MODEL, os.path.join(d, "x.gguf"))
        assert r.returncode == 2 and "expected IN OUT TYPE" in r.stderr, r.stderr
        r = run("quantize", "-t", "0", MODEL, os.path.join(d, "x.gguf"), "q8_0")
        assert r.returncode == 2 and "threads" in r.stderr, r.stderr
        r = run("quantize", "--help")
        assert r.returncode == 0 and "q4_k_m" in r.stdout
        checks += 6
    print("test_quantize: %d checks passed" % checks)


if __name__ == "__main__":
    sys.exit(main())
