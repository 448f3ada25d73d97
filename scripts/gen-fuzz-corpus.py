#!/usr/bin/env python3
"""Write the seed corpora of wick's fuzz targets (fuzz/corpus/<target>/).

Seeds are small, well-formed inputs that reach deep into each parser, so the fuzzer
mutates from there instead of rediscovering the format:
  gguf:      GGUF files (written with the gguf package) holding every metadata value
             type, nested arrays, a non-default alignment, and tensors of all 15 types;
             a version-2 copy; an empty file.
  model:     tiny Llama GGUF files (the model-construction target's input).
  tokenizer: byte strings (text, invalid UTF-8, special-token text) and token-id lists.
  template:  chat-template texts of the styles wick recognises.

Usage: scripts/gen-fuzz-corpus.py [OUT_DIR]   (default fuzz/corpus). Deterministic.
"""
import hashlib
import os
import sys
import tempfile

import numpy as np
from gguf import GGMLQuantizationType as Q
from gguf import GGUFValueType as V
from gguf import GGUFWriter

RNG = np.random.default_rng(1234)

QTYPES = [Q.F32, Q.F16, Q.BF16, Q.Q4_0, Q.Q4_1, Q.Q5_0, Q.Q5_1, Q.Q8_0, Q.Q8_1, Q.Q2_K,
          Q.Q3_K, Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.Q8_K]
BLOCK = {Q.F32: (1, 4), Q.F16: (1, 2), Q.BF16: (1, 2), Q.Q4_0: (32, 18), Q.Q4_1: (32, 20),
         Q.Q5_0: (32, 22), Q.Q5_1: (32, 24), Q.Q8_0: (32, 34), Q.Q8_1: (32, 40),
         Q.Q2_K: (256, 84), Q.Q3_K: (256, 110), Q.Q4_K: (256, 144), Q.Q5_K: (256, 176),
         Q.Q6_K: (256, 210), Q.Q8_K: (256, 292)}


def raw_blocks(qtype, n_elems):
    """Random block bytes with finite f16 scales (small exponents)."""
    bs, nb = BLOCK[qtype]
    raw = RNG.integers(0, 256, size=(n_elems // bs) * nb, dtype=np.uint8)
    raw[1::2] &= 0x3B  # keeps every little-endian f16 found at an even offset finite
    return raw


TMP = tempfile.TemporaryDirectory()


def new_writer(arch="llama"):
    return GGUFWriter(os.path.join(TMP.name, "x.gguf"), arch)


def write(writer):
    """The file's bytes."""
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with open(writer.path, "rb") as f:
        return f.read()


def gguf_all_types():
    w = new_writer("wick-fuzz")
    w.add_uint32("general.alignment", 64)
    w.add_string("general.name", "all types")
    w.add_key_value("t.u8", 200, V.UINT8)
    w.add_key_value("t.i8", -100, V.INT8)
    w.add_key_value("t.u16", 60000, V.UINT16)
    w.add_key_value("t.i16", -30000, V.INT16)
    w.add_key_value("t.u32", 4000000000, V.UINT32)
    w.add_key_value("t.i32", -2000000000, V.INT32)
    w.add_key_value("t.f32", 1.5, V.FLOAT32)
    w.add_key_value("t.bool", True, V.BOOL)
    w.add_key_value("t.u64", 2**63 + 5, V.UINT64)
    w.add_key_value("t.i64", -(2**62), V.INT64)
    w.add_key_value("t.f64", -2.25, V.FLOAT64)
    w.add_key_value("t.str", "h\u00e9llo \"w\"\n", V.STRING)
    w.add_key_value("t.arr_i32", [1, -2, 3], V.ARRAY, V.INT32)
    w.add_key_value("t.arr_f32", [0.5, 1.0], V.ARRAY, V.FLOAT32)
    w.add_key_value("t.arr_bool", [True, False], V.ARRAY, V.BOOL)
    w.add_key_value("t.arr_u8", [1, 2, 3, 4, 5, 6, 7, 8], V.ARRAY, V.UINT8)
    w.add_key_value("t.arr_str", ["a", "", "ccc"], V.ARRAY, V.STRING)
    w.add_key_value("t.arr_nested", [[1, 2], [3]], V.ARRAY, V.ARRAY)
    for qt in QTYPES:
        bs, _ = BLOCK[qt]
        ne0 = max(bs, 64) if bs == 1 else bs
        if qt == Q.F32:
            w.add_tensor("w.f32", RNG.standard_normal((2, ne0)).astype(np.float32))
        elif qt == Q.F16:
            w.add_tensor("w.f16", RNG.standard_normal((2, ne0)).astype(np.float16))
        else:
            raw = raw_blocks(qt, 2 * ne0)
            w.add_tensor("w." + qt.name.lower(), raw.reshape(2, -1), raw_dtype=qt)
    w.add_tensor("w.3d", RNG.standard_normal((2, 1, 32)).astype(np.float32))
    return write(w)


def gguf_empty():
    return write(new_writer("none"))


def tiny_llama(n_vocab=32, n_embd=32, n_ff=64, n_layer=2, n_head=4, n_head_kv=2, ctx=64,
               wtype=Q.Q8_0, tokenizer="gpt2"):
    """A tiny, complete Llama file: what the model-construction target starts from."""
    w = new_writer("llama")
    w.add_context_length(ctx)
    w.add_embedding_length(n_embd)
    w.add_block_count(n_layer)
    w.add_feed_forward_length(n_ff)
    w.add_head_count(n_head)
    w.add_head_count_kv(n_head_kv)
    w.add_rope_dimension_count(n_embd // n_head)
    w.add_rope_freq_base(10000.0)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_tokenizer_model(tokenizer)
    toks = ["<s>", "</s>"] + [chr(ord("a") + i % 26) * (1 + i // 26) for i in range(n_vocab - 2)]
    w.add_token_list(toks)
    w.add_token_types([3, 3] + [1] * (n_vocab - 2))
    if tokenizer == "gpt2":
        w.add_token_merges(["a a", "b b"])
    else:
        w.add_token_scores([0.0] * n_vocab)
    w.add_bos_token_id(0)
    w.add_eos_token_id(1)
    w.add_chat_template("{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}"
                        "<|im_end|>\n{% endfor %}")

    def mat(name, rows, cols, qt=wtype):
        if qt == Q.F32:
            w.add_tensor(name, (RNG.standard_normal((rows, cols)) * 0.1).astype(np.float32))
        else:
            raw = raw_blocks(qt, rows * cols)
            w.add_tensor(name, raw.reshape(rows, -1), raw_dtype=qt)

    def vec(name, n):
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    mat("token_embd.weight", n_vocab, n_embd)
    vec("output_norm.weight", n_embd)
    hd = n_embd // n_head
    for i in range(n_layer):
        p = f"blk.{i}."
        vec(p + "attn_norm.weight", n_embd)
        mat(p + "attn_q.weight", n_embd, n_embd)
        mat(p + "attn_k.weight", n_head_kv * hd, n_embd)
        mat(p + "attn_v.weight", n_head_kv * hd, n_embd)
        mat(p + "attn_output.weight", n_embd, n_embd)
        vec(p + "ffn_norm.weight", n_embd)
        mat(p + "ffn_gate.weight", n_ff, n_embd)
        mat(p + "ffn_up.weight", n_ff, n_embd)
        mat(p + "ffn_down.weight", n_embd, n_ff)
    return write(w)


TEXT_SEEDS = [
    b"Hello, world!",
    b"What is Rust?",
    b"  leading spaces and\ttabs\nnewlines\r\n",
    "caf\u00e9 \u65e5\u672c\u8a9e \U0001F600 \u00df".encode(),
    b"\xff\xfe invalid \xc3 utf-8 \xed\xa0\x80 surrogate \xf4\x90\x80\x80",
    b"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n",
    b"<s>[INST] hi [/INST]",
    b"1234567890 3.14159 -42",
    b"",
    b"a" * 300,
]

TEMPLATE_SEEDS = [
    # ChatML
    b"{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + "
    b"message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    b"{{ '<|im_start|>assistant\n' }}{% endif %}",
    # Llama 2
    b"{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}"
    b"{{ '[INST] ' + message['content'] + ' [/INST]' }}{% else %}{{ message['content'] + "
    b"eos_token }}{% endif %}{% endfor %}",
    # Llama 3
    b"{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    b"'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ "
    b"message['content'] | trim + '<|eot_id|>' %}{{ content }}{% endfor %}"
    b"{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}"
    b"{% endif %}",
    # Zephyr
    b"{% for message in messages %}{% if message['role'] == 'user' %}{{ '<|user|>\n' + "
    b"message['content'] + eos_token }}{% elif message['role'] == 'assistant' %}"
    b"{{ '<|assistant|>\n'  + message['content'] + eos_token }}{% endif %}{% endfor %}",
    b"",
    b"{{ unknown",
]


def put(out_dir, target, blobs):
    d = os.path.join(out_dir, target)
    os.makedirs(d, exist_ok=True)
    for b in blobs:
        name = hashlib.sha1(b).hexdigest()[:16]
        with open(os.path.join(d, name), "wb") as f:
            f.write(b)
    print(f"{d}: {len(blobs)} seeds, {sum(len(b) for b in blobs)} bytes")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "fuzz/corpus"
    all_types = gguf_all_types()
    v2 = bytearray(all_types)
    v2[4:8] = (2).to_bytes(4, "little")
    put(out, "fuzz_gguf", [all_types, bytes(v2), gguf_empty(), tiny_llama(n_vocab=8, n_layer=1)])
    put(out, "fuzz_model", [tiny_llama(), tiny_llama(wtype=Q.F32, n_layer=1),
                            tiny_llama(n_head_kv=4, tokenizer="llama", wtype=Q.Q4_0)])
    ids = [np.array(x, dtype="<i4").tobytes() for x in
           ([0, 1, 2, 3], [5, 40000, 49151, 0], [-1, 2**31 - 1, 7], list(range(64)))]
    put(out, "fuzz_tokenizer", TEXT_SEEDS + ids)
    put(out, "fuzz_template", TEMPLATE_SEEDS)


if __name__ == "__main__":
    main()
