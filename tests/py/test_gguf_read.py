"""wick's GGUF reader against the gguf package: every metadata key (order, type,
value; arrays element by element) and every tensor (name, type, shape, data
offset, byte size) of the default model."""
import os
import sys

import gguf
import numpy as np

import wick_gguf_ctypes as wk


def field_bytes(field, i):
    return bytes(field.parts[field.data[i]])


def main():
    path = os.environ["WICK_TEST_MODEL"]
    lib = wk.load()
    g = wk.open_gguf(lib, path)
    ref = gguf.GGUFReader(path)
    checks = 0

    fields = [f for name, f in ref.fields.items() if not name.startswith("GGUF.")]
    assert lib.wk_gguf_version(g) == int(ref.fields["GGUF.version"].contents())
    assert lib.wk_gguf_n_kv(g) == len(fields), (lib.wk_gguf_n_kv(g), len(fields))
    assert lib.wk_gguf_alignment(g) == ref.alignment
    assert lib.wk_gguf_data_offset(g) == ref.data_offset
    checks += 4

    for i, f in enumerate(fields):
        key = lib.wk_gguf_key(g, i).decode()
        assert key == f.name, (i, key, f.name)
        vtype = lib.wk_gguf_kv_type(g, i)
        assert vtype == int(f.types[0]), (key, vtype, f.types)
        if vtype == 9:
            et, values = wk.array(lib, g, key)
            assert et == int(f.types[1]), (key, et, f.types)
            if et == 8:
                expect = [field_bytes(f, j) for j in range(len(f.data))]
            elif et == 9:
                expect = len(f.data)
            else:
                expect = list(f.contents())
            assert values == expect, key
        elif vtype == 8:
            assert wk.scalar(lib, g, key, vtype) == field_bytes(f, 0), key
        else:
            value = wk.scalar(lib, g, key, vtype)
            expect = f.contents()
            if vtype == 6:
                expect = float(np.float32(expect))
            assert value == expect, (key, value, expect)
        checks += 1

    assert lib.wk_gguf_n_tensors(g) == len(ref.tensors)
    for i, t in enumerate(ref.tensors):
        ct = lib.wk_gguf_tensor_at(g, i).contents
        assert ct.name.decode() == t.name, (i, ct.name, t.name)
        assert ct.type == int(t.tensor_type), (t.name, ct.type, t.tensor_type)
        assert ct.n_dims == len(t.shape), t.name
        assert list(ct.ne[: ct.n_dims]) == [int(x) for x in t.shape], (t.name, list(ct.ne))
        assert all(x == 1 for x in ct.ne[ct.n_dims:]), t.name
        assert lib.wk_gguf_data_offset(g) + ct.offset == t.data_offset, t.name
        assert ct.nbytes == t.n_bytes, (t.name, ct.nbytes, t.n_bytes)
        checks += 1

    lib.wk_gguf_close(g)
    print(f"test_gguf_read.py: {checks} checks passed ({len(fields)} keys, "
          f"{len(ref.tensors)} tensors)")


if __name__ == "__main__":
    sys.exit(main())
