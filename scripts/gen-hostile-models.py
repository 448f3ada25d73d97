#!/usr/bin/env python3
"""Write hostile but well-formed GGUF model files: a tiny, valid Llama model, and
variants of it whose hyperparameters, tensors or tokenizer metadata are hostile
(zero heads, heads that do not divide the width, a billion blocks, a zero context,
a vocabulary that disagrees with the embedding, a missing or mis-shaped tensor, an
unknown architecture, token ids out of range, a KV cache that cannot fit, ...).

Every file is a correct GGUF file (written with the gguf package's GGUFWriter): the
hostility is in what it says, so the GGUF reader accepts it and the model loader
must refuse it. Files are small (a few hundred KB) and generated at test time;
none is committed.

Usage:  scripts/gen-hostile-models.py OUT_DIR [VARIANT...]   (default: all)
        scripts/gen-hostile-models.py --list
As a module: VARIANTS (name -> description) and write_variant(name, path).
"""
import os
import sys

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V
from gguf import GGUFWriter

# The baseline: a tiny Llama with grouped-query attention, tied output embedding
# and a byte-level BPE vocabulary (every byte is a token, so any prompt encodes).
BASE = dict(n_embd=64, n_ff=128, n_layer=2, n_head=4, n_head_kv=2, ctx=256)


def byte_to_unicode():
    """GPT-2's byte-level alphabet: each byte as the character byte-level BPE uses."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\u00a1"), ord("\u00ac") + 1)) + \
        list(range(ord("\u00ae"), ord("\u00ff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def vocabulary():
    """(tokens, token types, merges): specials, the 256 byte tokens, a few merges."""
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    b2u = byte_to_unicode()
    byte_tokens = [b2u[b] for b in range(256)]
    merged = [b2u[ord("t")] + b2u[ord("h")], b2u[ord("h")] + b2u[ord("e")],
              b2u[ord(" ")] + b2u[ord("t")]]
    merges = [b2u[ord("t")] + " " + b2u[ord("h")], b2u[ord("h")] + " " + b2u[ord("e")],
              b2u[ord(" ")] + " " + b2u[ord("t")]]
    tokens = specials + byte_tokens + merged
    types = [3] * len(specials) + [1] * (len(tokens) - len(specials))
    return tokens, types, merges


CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
          "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
          "{{ '<|im_start|>assistant\n' }}{% endif %}")


class Model:
    """The metadata and tensors of one file, editable before it is written."""

    def __init__(self, seed=7, **over):
        p = dict(BASE, **over)
        self.p = p
        self.arch = "llama"
        self.alignment = None
        self.misalign = False  # pad the metadata so that tensor data starts at an odd offset
        rng = np.random.default_rng(seed)
        tokens, types, merges = vocabulary()
        n_vocab = len(tokens)
        hd = p["n_embd"] // p["n_head"]
        a = self.arch
        # key -> (value, value type, element type)
        self.kv = {
            f"{a}.context_length": (p["ctx"], V.UINT32, None),
            f"{a}.embedding_length": (p["n_embd"], V.UINT32, None),
            f"{a}.block_count": (p["n_layer"], V.UINT32, None),
            f"{a}.feed_forward_length": (p["n_ff"], V.UINT32, None),
            f"{a}.attention.head_count": (p["n_head"], V.UINT32, None),
            f"{a}.attention.head_count_kv": (p["n_head_kv"], V.UINT32, None),
            f"{a}.rope.dimension_count": (hd, V.UINT32, None),
            f"{a}.rope.freq_base": (10000.0, V.FLOAT32, None),
            f"{a}.attention.layer_norm_rms_epsilon": (1e-5, V.FLOAT32, None),
            f"{a}.vocab_size": (n_vocab, V.UINT32, None),
            "tokenizer.ggml.model": ("gpt2", V.STRING, None),
            "tokenizer.ggml.pre": ("smollm", V.STRING, None),
            "tokenizer.ggml.tokens": (tokens, V.ARRAY, V.STRING),
            "tokenizer.ggml.token_type": (types, V.ARRAY, V.INT32),
            "tokenizer.ggml.merges": (merges, V.ARRAY, V.STRING),
            "tokenizer.ggml.bos_token_id": (1, V.UINT32, None),
            "tokenizer.ggml.eos_token_id": (2, V.UINT32, None),
            "tokenizer.ggml.add_bos_token": (False, V.BOOL, None),
            "tokenizer.chat_template": (CHATML, V.STRING, None),
        }
        # name -> (array as stored: f32 values, or raw bytes with raw_dtype), raw_dtype
        self.tensors = {}

        def mat(name, rows, cols):
            self.tensors[name] = ((rng.standard_normal((rows, cols)) * 0.05).astype(np.float32),
                                  None)

        def vec(name, n):
            self.tensors[name] = (np.ones(n, dtype=np.float32), None)

        e, f, kvd = p["n_embd"], p["n_ff"], p["n_head_kv"] * hd
        mat("token_embd.weight", n_vocab, e)
        for i in range(p["n_layer"]):
            b = f"blk.{i}."
            vec(b + "attn_norm.weight", e)
            mat(b + "attn_q.weight", e, e)
            mat(b + "attn_k.weight", kvd, e)
            mat(b + "attn_v.weight", kvd, e)
            mat(b + "attn_output.weight", e, e)
            vec(b + "ffn_norm.weight", e)
            mat(b + "ffn_gate.weight", f, e)
            mat(b + "ffn_up.weight", f, e)
            mat(b + "ffn_down.weight", e, f)
        vec("output_norm.weight", e)

    def set(self, key, value, vtype=V.UINT32, sub=None):
        self.kv[key] = (value, vtype, sub)

    def drop(self, key):
        self.kv.pop(key, None)

    def write(self, path):
        if not self.misalign:
            return self._write(path)
        # With alignment 1 the data section starts right after the metadata: grow a
        # padding string until it starts at an odd offset, so that every tensor
        # (f32 values, Q8_0 blocks with f16 scales) sits at a misaligned address.
        for pad in range(8):
            self.kv["general.padding"] = ("x" * pad, V.STRING, None)
            self._write(path)
            if data_offset(path) % 2 == 1:
                return
        raise RuntimeError("could not misalign the data section")

    def _write(self, path):
        w = GGUFWriter(path, self.arch if self.arch is not None else "llama")
        if self.arch is None:
            w.kv_data[0].pop("general.architecture", None)
        if self.alignment is not None:
            w.add_custom_alignment(self.alignment)
        for key, (value, vtype, sub) in self.kv.items():
            w.add_key_value(key, value, vtype, sub_type=sub)
        for name, (data, raw_dtype) in self.tensors.items():
            if raw_dtype is None:
                w.add_tensor(name, data)
            else:
                w.add_tensor(name, data, raw_dtype=raw_dtype)
        w.write_header_to_file()
        w.write_kv_data_to_file()
        w.write_tensors_to_file()
        w.close()


def data_offset(path):
    """Where a GGUF file's data section starts (the first tensor's data)."""
    from gguf import GGUFReader
    r = GGUFReader(path)
    return min(int(t.data_offset) for t in r.tensors)


def _rng_f32(shape, seed=3):
    return (np.random.default_rng(seed).standard_normal(shape) * 0.05).astype(np.float32)


def v_valid(m):
    """The baseline, unchanged: must load and generate."""


def v_zero_heads(m):
    m.set("llama.attention.head_count", 0)


def v_zero_kv_heads(m):
    m.set("llama.attention.head_count_kv", 0)


def v_heads_not_dividing(m):
    m.set("llama.attention.head_count", 5)


def v_kv_heads_not_dividing(m):
    m.set("llama.attention.head_count_kv", 3)


def v_kv_heads_above_heads(m):
    m.set("llama.attention.head_count_kv", 8)


def v_odd_head_dim(m):
    m.set("llama.attention.head_count", 64)  # 64 / 64 = 1: odd head dimension


def v_billion_blocks(m):
    m.set("llama.block_count", 1_000_000_000)


def v_zero_blocks(m):
    m.set("llama.block_count", 0)


def v_more_blocks_than_tensors(m):
    m.set("llama.block_count", 3)


def v_zero_context(m):
    m.set("llama.context_length", 0)


def v_zero_width(m):
    m.set("llama.embedding_length", 0)


def v_huge_width(m):
    m.set("llama.embedding_length", 2**40, V.UINT64)


def v_negative_blocks(m):
    m.set("llama.block_count", -2, V.INT32)


def v_blocks_as_string(m):
    m.set("llama.block_count", "2", V.STRING)


def v_missing_width(m):
    m.drop("llama.embedding_length")


def v_vocab_size_disagrees(m):
    m.set("llama.vocab_size", 100)


def v_tokenizer_bigger_than_embedding(m):
    data, _ = m.tensors["token_embd.weight"]
    m.tensors["token_embd.weight"] = (data[:200].copy(), None)
    m.drop("llama.vocab_size")


def v_missing_tensor(m):
    del m.tensors["blk.1.ffn_down.weight"]


def v_missing_embedding(m):
    del m.tensors["token_embd.weight"]


def v_missing_norm(m):
    del m.tensors["output_norm.weight"]


def v_misshaped_tensor(m):
    m.tensors["blk.0.attn_q.weight"] = (_rng_f32((96, 64)), None)


def v_misshaped_kv_tensor(m):
    m.tensors["blk.0.attn_k.weight"] = (_rng_f32((64, 64)), None)  # kv width is 32


def v_misshaped_output(m):
    m.tensors["output.weight"] = (_rng_f32((100, 64)), None)


def v_three_dim_tensor(m):
    m.tensors["blk.0.ffn_up.weight"] = (_rng_f32((2, 64, 64)), None)


def v_norm_wrong_length(m):
    m.tensors["blk.0.attn_norm.weight"] = (np.ones(32, dtype=np.float32), None)


def v_unsupported_tensor_type(m):
    """IQ2_XXS (type 16): a GGUF type that wick does not know."""
    m.tensors["blk.0.attn_q.weight"] = (np.zeros((64, 66), dtype=np.uint8), Q.IQ2_XXS)


def v_unknown_architecture(m):
    m.arch = "gpt-neox"


def v_missing_architecture(m):
    m.arch = None


def v_architecture_not_string(m):
    m.arch = None
    m.set("general.architecture", 7)


def v_bos_out_of_range(m):
    m.set("tokenizer.ggml.bos_token_id", 1_000_000)


def v_eos_out_of_range(m):
    m.set("tokenizer.ggml.eos_token_id", 4_000_000_000)


def v_token_types_short(m):
    tokens = m.kv["tokenizer.ggml.tokens"][0]
    m.set("tokenizer.ggml.token_type", [1] * (len(tokens) - 1), V.ARRAY, V.INT32)


def v_token_types_out_of_range(m):
    tokens = m.kv["tokenizer.ggml.tokens"][0]
    m.set("tokenizer.ggml.token_type", [99] * len(tokens), V.ARRAY, V.INT32)


def v_missing_tokens(m):
    m.drop("tokenizer.ggml.tokens")


def v_unknown_tokenizer(m):
    m.set("tokenizer.ggml.model", "wordpiece", V.STRING)


def v_merges_unknown_tokens(m):
    m.set("tokenizer.ggml.merges", ["zz qq", "\u0100\u0101 x", "a", " ", "  "], V.ARRAY, V.STRING)


def v_kv_cache_too_big(m):
    # 2 layers x 2^30 tokens x 32 floats x 2 (K and V) x 4 bytes = 512 GiB
    m.set("llama.context_length", 2**30)


def v_context_above_limit(m):
    m.set("llama.context_length", 2**40, V.UINT64)


def v_rope_dims_too_big(m):
    m.set("llama.rope.dimension_count", 64)


def v_rms_eps_nan(m):
    m.set("llama.attention.layer_norm_rms_epsilon", float("nan"), V.FLOAT32)


def v_rope_base_negative(m):
    m.set("llama.rope.freq_base", -1.0, V.FLOAT32)


def v_alignment_one(m):
    """general.alignment 1, data at odd offsets, projections in Q8_0: whoever reads
    f32 values or f16 block scales in place reads them misaligned."""
    from gguf import quants
    m.alignment = 1
    m.misalign = True
    for name, (data, raw) in list(m.tensors.items()):
        if data.ndim == 2 and name.startswith("blk."):
            m.tensors[name] = (quants.quantize(data, Q.Q8_0), Q.Q8_0)


def v_nan_weights(m):
    for name, (data, raw) in list(m.tensors.items()):
        if name.endswith("attn_q.weight"):
            m.tensors[name] = (np.full(data.shape, np.nan, dtype=np.float32), raw)


def v_inf_embedding(m):
    data, _ = m.tensors["token_embd.weight"]
    m.tensors["token_embd.weight"] = (np.full(data.shape, np.inf, dtype=np.float32), None)


def v_bad_chat_template(m):
    m.set("tokenizer.chat_template", "{% for x in %}{{ raise_exception('no') }", V.STRING)


def v_no_chat_template(m):
    m.drop("tokenizer.chat_template")


VARIANTS = {name[2:]: fn for name, fn in sorted(globals().items())
            if name.startswith("v_") and callable(fn)}


def write_variant(name, path):
    m = Model()
    VARIANTS[name](m)
    m.write(path)
    return path


def main(argv):
    if len(argv) > 1 and argv[1] == "--list":
        for name, fn in VARIANTS.items():
            print(f"{name}: {fn.__doc__ or ''}".rstrip(": "))
        return 0
    if len(argv) < 2:
        print(__doc__)
        return 2
    out = argv[1]
    os.makedirs(out, exist_ok=True)
    for name in argv[2:] or VARIANTS:
        path = write_variant(name, os.path.join(out, name + ".gguf"))
        print(f"{path}: {os.path.getsize(path)} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
