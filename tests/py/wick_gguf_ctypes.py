"""ctypes bindings to wick's GGUF reader and writer, for the Python tests."""
import ctypes
import os
from ctypes import (POINTER, Structure, byref, c_bool, c_char_p, c_double, c_int, c_int64,
                    c_size_t, c_uint32, c_uint64, c_void_p)


class Tensor(Structure):
    _fields_ = [("name", c_char_p), ("type", c_int), ("n_dims", c_int), ("ne", c_int64 * 4),
                ("offset", c_uint64), ("nbytes", c_size_t), ("data", c_void_p)]


VTYPE_SIZE = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
VTYPE_NUMPY = {0: "u1", 1: "i1", 2: "<u2", 3: "<i2", 4: "<u4", 5: "<i4", 6: "<f4", 7: "u1",
               10: "<u8", 11: "<i8", 12: "<f8"}
SIGNED = {1, 3, 5, 11}
UNSIGNED = {0, 2, 4, 10}


def load():
    # Lazy binding: these tests call only the GGUF functions, and need nothing
    # else in the library to resolve.
    lib = ctypes.CDLL(os.environ["WICK_LIB"], mode=os.RTLD_LAZY)
    sigs = {
        "wk_last_error": (c_char_p, []),
        "wk_gguf_open": (c_int, [c_char_p, POINTER(c_void_p)]),
        "wk_gguf_close": (None, [c_void_p]),
        "wk_gguf_version": (c_uint32, [c_void_p]),
        "wk_gguf_alignment": (c_size_t, [c_void_p]),
        "wk_gguf_data_offset": (c_size_t, [c_void_p]),
        "wk_gguf_n_kv": (c_int64, [c_void_p]),
        "wk_gguf_key": (c_char_p, [c_void_p, c_int64]),
        "wk_gguf_kv_type": (c_int, [c_void_p, c_int64]),
        "wk_gguf_get_u64": (c_int, [c_void_p, c_char_p, POINTER(c_uint64)]),
        "wk_gguf_get_i64": (c_int, [c_void_p, c_char_p, POINTER(c_int64)]),
        "wk_gguf_get_f64": (c_int, [c_void_p, c_char_p, POINTER(c_double)]),
        "wk_gguf_get_bool": (c_int, [c_void_p, c_char_p, POINTER(c_bool)]),
        "wk_gguf_get_str": (c_int, [c_void_p, c_char_p, POINTER(c_void_p), POINTER(c_size_t)]),
        "wk_gguf_get_arr": (c_int, [c_void_p, c_char_p, POINTER(c_int), POINTER(c_uint64)]),
        "wk_gguf_get_arr_str": (c_int, [c_void_p, c_char_p, c_uint64, POINTER(c_void_p),
                                        POINTER(c_size_t)]),
        "wk_gguf_get_arr_data": (c_int, [c_void_p, c_char_p, POINTER(c_void_p)]),
        "wk_gguf_n_tensors": (c_int64, [c_void_p]),
        "wk_gguf_tensor_at": (POINTER(Tensor), [c_void_p, c_int64]),
        "wk_gguf_writer_create": (c_int, [POINTER(c_void_p)]),
        "wk_gguf_writer_free": (None, [c_void_p]),
        "wk_gguf_writer_copy_kv": (c_int, [c_void_p, c_void_p, c_int64]),
        "wk_gguf_writer_set_value": (c_int, [c_void_p, c_char_p, c_int, c_void_p]),
        "wk_gguf_writer_set_str": (c_int, [c_void_p, c_char_p, c_char_p]),
        "wk_gguf_writer_set_arr": (c_int, [c_void_p, c_char_p, c_int, c_void_p, c_uint64]),
        "wk_gguf_writer_set_arr_str": (c_int, [c_void_p, c_char_p, POINTER(c_char_p), c_uint64]),
        "wk_gguf_writer_set_alignment": (c_int, [c_void_p, c_size_t]),
        "wk_gguf_writer_add_tensor": (c_int, [c_void_p, c_char_p, c_int, c_int, POINTER(c_int64),
                                              c_void_p, c_size_t]),
        "wk_gguf_writer_add_tensor_ref": (c_int, [c_void_p, c_char_p, c_int, c_int,
                                                  POINTER(c_int64), c_void_p, c_size_t]),
        "wk_gguf_writer_write": (c_int, [c_void_p, c_char_p]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def ok(lib, status, what):
    if status != 0:
        raise AssertionError(f"{what} failed ({status}): {lib.wk_last_error().decode()}")


def open_gguf(lib, path):
    g = c_void_p()
    ok(lib, lib.wk_gguf_open(str(path).encode(), byref(g)), f"wk_gguf_open({path})")
    return g


def scalar(lib, g, key, vtype):
    """The value of a scalar key, read with wick's typed getters."""
    k = key.encode()
    if vtype in UNSIGNED:
        v = c_uint64()
        ok(lib, lib.wk_gguf_get_u64(g, k, byref(v)), key)
        return v.value
    if vtype in SIGNED:
        v = c_int64()
        ok(lib, lib.wk_gguf_get_i64(g, k, byref(v)), key)
        return v.value
    if vtype in (6, 12):
        v = c_double()
        ok(lib, lib.wk_gguf_get_f64(g, k, byref(v)), key)
        return v.value
    if vtype == 7:
        v = c_bool()
        ok(lib, lib.wk_gguf_get_bool(g, k, byref(v)), key)
        return v.value
    if vtype == 8:
        p, n = c_void_p(), c_size_t()
        ok(lib, lib.wk_gguf_get_str(g, k, byref(p), byref(n)), key)
        return ctypes.string_at(p, n.value)
    raise ValueError(vtype)


def array(lib, g, key):
    """(element type, list of values) of an array key; strings as bytes, nested as None."""
    k = key.encode()
    et, n = c_int(), c_uint64()
    ok(lib, lib.wk_gguf_get_arr(g, k, byref(et), byref(n)), key)
    if et.value == 8:
        out = []
        for i in range(n.value):
            p, ln = c_void_p(), c_size_t()
            ok(lib, lib.wk_gguf_get_arr_str(g, k, i, byref(p), byref(ln)), key)
            out.append(ctypes.string_at(p, ln.value))
        return et.value, out
    if et.value == 9:
        return et.value, n.value
    import numpy as np
    p = c_void_p()
    ok(lib, lib.wk_gguf_get_arr_data(g, k, byref(p)), key)
    raw = ctypes.string_at(p, n.value * VTYPE_SIZE[et.value]) if n.value else b""
    return et.value, np.frombuffer(raw, dtype=VTYPE_NUMPY[et.value]).tolist()
