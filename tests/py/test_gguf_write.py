"""wick's GGUF writer read back by the gguf package: a file with every value
type, arrays of each, and tensors of several types and shapes; and a copy of the
default model made key by key and tensor by tensor, which the gguf package must
read exactly as it reads the original."""
import ctypes
import os
import sys
import tempfile
from ctypes import byref, c_char_p, c_int64, c_void_p

import gguf
import numpy as np

import wick_gguf_ctypes as wk

SCALARS = [  # key, type id, numpy dtype, value
    ("t.u8", 0, "u1", 200), ("t.i8", 1, "i1", -100), ("t.u16", 2, "<u2", 60000),
    ("t.i16", 3, "<i2", -30000), ("t.u32", 4, "<u4", 4000000000), ("t.i32", 5, "<i4", -2000000000),
    ("t.f32", 6, "<f4", 0.1), ("t.bool", 7, "u1", 1), ("t.u64", 10, "<u8", 2**64 - 1),
    ("t.i64", 11, "<i8", -2**63), ("t.f64", 12, "<f8", -1.0 / 3.0),
]
ARRAYS = [  # key, element type id, numpy dtype, values
    ("a.u8", 0, "u1", [0, 1, 255]), ("a.i8", 1, "i1", [-128, 127]), ("a.u16", 2, "<u2", [7, 65535]),
    ("a.i16", 3, "<i2", [-32768, 5]), ("a.u32", 4, "<u4", list(range(100))),
    ("a.i32", 5, "<i4", [-1, 0, 1]), ("a.f32", 6, "<f4", [0.5, -1e30]),
    ("a.bool", 7, "u1", [1, 0, 0, 1]), ("a.u64", 10, "<u8", [2**63]),
    ("a.i64", 11, "<i8", [-5, 2**62]), ("a.f64", 12, "<f8", [1e300, 2.5]), ("a.empty", 5, "<i4", []),
]
STRINGS = ["plain", "", "utf-8 \u2713 \u4e2d\u6587"]
TENSORS = [  # name, type, ne (innermost first)
    ("w.f32", gguf.GGMLQuantizationType.F32, [7]),
    ("w.f16", gguf.GGMLQuantizationType.F16, [5, 3]),
    ("w.q4_0", gguf.GGMLQuantizationType.Q4_0, [64, 3]),
    ("w.q6_k", gguf.GGMLQuantizationType.Q6_K, [256, 2, 2]),
    ("w.bf16", gguf.GGMLQuantizationType.BF16, [3, 1, 2, 2]),
]


def tensor_bytes(i, qtype, ne):
    block, size = gguf.GGML_QUANT_SIZES[qtype]
    n = (int(np.prod(ne)) // block) * size
    rng = np.random.default_rng(i)
    return rng.integers(0, 256, n, dtype=np.uint8).tobytes()


def write_every_type(lib, path):
    w = c_void_p()
    wk.ok(lib, lib.wk_gguf_writer_create(byref(w)), "writer_create")
    wk.ok(lib, lib.wk_gguf_writer_set_alignment(w, 64), "set_alignment")
    for key, t, dt, v in SCALARS:
        buf = np.array([v], dtype=dt).tobytes()
        wk.ok(lib, lib.wk_gguf_writer_set_value(w, key.encode(), t, buf), key)
    wk.ok(lib, lib.wk_gguf_writer_set_str(w, b"t.str", "h\u00e9llo".encode()), "t.str")
    for key, t, dt, v in ARRAYS:
        buf = np.array(v, dtype=dt).tobytes()
        wk.ok(lib, lib.wk_gguf_writer_set_arr(w, key.encode(), t, buf or None, len(v)), key)
    strs = (c_char_p * len(STRINGS))(*[s.encode() for s in STRINGS])
    wk.ok(lib, lib.wk_gguf_writer_set_arr_str(w, b"a.str", strs, len(STRINGS)), "a.str")
    for i, (name, qtype, ne) in enumerate(TENSORS):
        data = tensor_bytes(i, qtype, ne)
        wk.ok(lib, lib.wk_gguf_writer_add_tensor(w, name.encode(), int(qtype), len(ne),
                                                 (c_int64 * 4)(*ne), data, len(data)), name)
    wk.ok(lib, lib.wk_gguf_writer_write(w, str(path).encode()), "write")
    lib.wk_gguf_writer_free(w)


def check_every_type(path):
    r = gguf.GGUFReader(path)
    checks = 0
    assert r.alignment == 64
    assert int(r.fields["GGUF.version"].contents()) == 3
    assert int(r.fields["general.alignment"].contents()) == 64
    for key, t, dt, v in SCALARS:
        f = r.fields[key]
        assert int(f.types[0]) == t, (key, f.types)
        got = f.contents()
        expect = np.array([v], dtype=dt)[0].item()
        if t == 7:
            expect = bool(v)
        assert got == expect, (key, got, expect)
        checks += 1
    assert r.fields["t.str"].contents() == "h\u00e9llo"
    for key, t, dt, v in ARRAYS:
        f = r.fields[key]
        # the gguf package lists no element type for an empty array; check the raw field
        assert int(f.types[0]) == 9 and int(f.parts[3][0]) == t, (key, f.types, f.parts)
        got = list(f.contents())
        expect = np.array(v, dtype=dt).tolist()
        if t == 7:
            expect = [bool(x) for x in v]
        assert got == expect, (key, got, expect)
        checks += 1
    assert r.fields["a.str"].contents() == STRINGS
    for i, (name, qtype, ne) in enumerate(TENSORS):
        t = r.tensors[i]
        assert t.name == name and t.tensor_type == qtype, (t.name, t.tensor_type)
        assert [int(x) for x in t.shape] == ne, (name, t.shape)
        assert t.data_offset % 64 == 0
        raw = np.asarray(t.data).tobytes()
        assert raw == tensor_bytes(i, qtype, ne), name
        checks += 1
    return checks + 5


def copy_model(lib, src, dst):
    g = wk.open_gguf(lib, src)
    w = c_void_p()
    wk.ok(lib, lib.wk_gguf_writer_create(byref(w)), "writer_create")
    for i in range(lib.wk_gguf_n_kv(g)):
        wk.ok(lib, lib.wk_gguf_writer_copy_kv(w, g, i), f"copy_kv {i}")
    for i in range(lib.wk_gguf_n_tensors(g)):
        t = lib.wk_gguf_tensor_at(g, i).contents
        wk.ok(lib, lib.wk_gguf_writer_add_tensor_ref(w, t.name, t.type, t.n_dims, t.ne, t.data,
                                                     t.nbytes), t.name)
    wk.ok(lib, lib.wk_gguf_writer_write(w, str(dst).encode()), "write")
    lib.wk_gguf_writer_free(w)
    lib.wk_gguf_close(g)


def check_same(a_path, b_path):
    a, b = gguf.GGUFReader(a_path), gguf.GGUFReader(b_path)
    assert list(a.fields) == list(b.fields)
    for name in a.fields:
        fa, fb = a.fields[name], b.fields[name]
        assert fa.types == fb.types, name
        assert len(fa.data) == len(fb.data), name
        for j in range(len(fa.data)):
            assert bytes(fa.parts[fa.data[j]]) == bytes(fb.parts[fb.data[j]]), (name, j)
    assert len(a.tensors) == len(b.tensors)
    for ta, tb in zip(a.tensors, b.tensors):
        assert ta.name == tb.name and ta.tensor_type == tb.tensor_type, ta.name
        assert list(ta.shape) == list(tb.shape) and ta.data_offset == tb.data_offset, ta.name
        assert np.asarray(ta.data).tobytes() == np.asarray(tb.data).tobytes(), ta.name
    return len(a.fields) + len(a.tensors)


def main():
    lib = wk.load()
    with tempfile.TemporaryDirectory() as tmp:
        every = os.path.join(tmp, "every-type.gguf")
        write_every_type(lib, every)
        n1 = check_every_type(every)
        copy = os.path.join(tmp, "copy.gguf")
        copy_model(lib, os.environ["WICK_TEST_MODEL"], copy)
        n2 = check_same(os.environ["WICK_TEST_MODEL"], copy)
    print(f"test_gguf_write.py: {n1 + n2} checks passed")


if __name__ == "__main__":
    sys.exit(main())
