"""ctypes access to wick's model API (libwick.so) for the Python model tests."""
import ctypes as C
import os

import numpy as np


class ModelOptions(C.Structure):
    _fields_ = [("device", C.c_int), ("form", C.c_int), ("n_threads", C.c_int), ("n_ctx", C.c_int64)]


class SamplerOptions(C.Structure):
    _fields_ = [("temperature", C.c_float), ("top_k", C.c_int), ("top_p", C.c_float), ("seed", C.c_uint64)]


class GenerateOptions(C.Structure):
    _fields_ = [("max_tokens", C.c_int64), ("sampling", SamplerOptions), ("stop_at_eos", C.c_bool)]


class GenerateStats(C.Structure):
    _fields_ = [("n_prompt", C.c_int64), ("prefill_ms", C.c_double), ("n_decode", C.c_int64),
                ("decode_ms", C.c_double), ("n_generated", C.c_int64), ("hit_eos", C.c_bool),
                ("hit_context", C.c_bool)]


class ModelInfo(C.Structure):
    _fields_ = [(n, C.c_int64) for n in ("n_vocab", "n_ctx", "n_ctx_train", "dim", "n_layers", "n_heads",
                                          "n_kv_heads", "head_dim", "ff_dim", "n_rot")] + \
               [("rope_base", C.c_float), ("rms_eps", C.c_float), ("device", C.c_int), ("form", C.c_int),
                ("n_threads", C.c_int), ("weight_bytes", C.c_size_t)]


TOKEN_CB = C.CFUNCTYPE(C.c_int, C.c_void_p, C.c_int32, C.POINTER(C.c_char), C.c_size_t)
FORMS = {"auto": 0, "quantized": 1, "precise": 2, "f32": 3, "f16": 4}


class WickError(Exception):
    pass


class Lib:
    def __init__(self, path=None):
        path = path or os.environ.get("WICK_LIB", "build/libwick.so")
        self.lib = lib = C.CDLL(path)
        lib.wk_last_error.restype = C.c_char_p
        lib.wk_model_load.argtypes = [C.c_char_p, C.POINTER(ModelOptions), C.POINTER(C.c_void_p)]
        lib.wk_model_free.argtypes = [C.c_void_p]
        lib.wk_model_get_info.argtypes = [C.c_void_p]
        lib.wk_model_get_info.restype = C.POINTER(ModelInfo)
        lib.wk_model_tokenizer.argtypes = [C.c_void_p]
        lib.wk_model_tokenizer.restype = C.c_void_p
        lib.wk_model_forward.argtypes = [C.c_void_p, C.POINTER(C.c_int32), C.c_int64, C.c_int64,
                                         C.c_bool, C.POINTER(C.c_float)]
        lib.wk_model_generate.argtypes = [C.c_void_p, C.POINTER(C.c_int32), C.c_int64,
                                          C.POINTER(GenerateOptions), TOKEN_CB, C.c_void_p,
                                          C.POINTER(GenerateStats)]
        lib.wk_tokenizer_encode_alloc.argtypes = [C.c_void_p, C.c_char_p, C.c_size_t, C.c_bool,
                                                  C.c_bool, C.POINTER(C.POINTER(C.c_int32)),
                                                  C.POINTER(C.c_size_t)]
        self.libc = C.CDLL(None)
        self.libc.free.argtypes = [C.c_void_p]

    def error(self):
        return self.lib.wk_last_error().decode()

    def check(self, st, what):
        if st != 0:
            raise WickError(f"{what}: status {st}: {self.error()}")


class Model:
    def __init__(self, lib, path, form="quantized", threads=2, n_ctx=512):
        self.lib = lib
        opt = ModelOptions(0, FORMS[form], threads, n_ctx)
        h = C.c_void_p()
        lib.check(lib.lib.wk_model_load(path.encode(), C.byref(opt), C.byref(h)), f"load {path}")
        self.h = h

    def close(self):
        if self.h:
            self.lib.lib.wk_model_free(self.h)
            self.h = None

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def info(self):
        return self.lib.lib.wk_model_get_info(self.h).contents

    def tokenize(self, text, special=False):
        tok = self.lib.lib.wk_model_tokenizer(self.h)
        out = C.POINTER(C.c_int32)()
        n = C.c_size_t()
        b = text.encode()
        self.lib.check(self.lib.lib.wk_tokenizer_encode_alloc(tok, b, len(b), True, special,
                                                              C.byref(out), C.byref(n)), "encode")
        ids = [out[i] for i in range(n.value)]
        self.lib.libc.free(out)
        return ids

    def logits(self, ids, n_vocab):
        arr = (C.c_int32 * len(ids))(*ids)
        out = np.zeros(n_vocab, dtype=np.float32)
        self.lib.check(self.lib.lib.wk_model_forward(self.h, arr, len(ids), 0, False,
                                                     out.ctypes.data_as(C.POINTER(C.c_float))),
                       "forward")
        return out

    def generate(self, ids, n, temperature=0.0, top_k=40, top_p=0.95, seed=42, stop_at_eos=False):
        arr = (C.c_int32 * len(ids))(*ids)
        opt = GenerateOptions(n, SamplerOptions(temperature, top_k, top_p, seed), stop_at_eos)
        got = []
        text = []

        def cb(user, token, s, length):
            if token >= 0:
                got.append(token)
            text.append(C.string_at(s, length))
            return 0

        stats = GenerateStats()
        self.lib.check(self.lib.lib.wk_model_generate(self.h, arr, len(ids), C.byref(opt),
                                                      TOKEN_CB(cb), None, C.byref(stats)),
                       "generate")
        return got, b"".join(text), stats
