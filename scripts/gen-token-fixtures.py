#!/usr/bin/env python3
"""Token-id fixtures from llama.cpp (through llama-cpp-python) for wick's tokenizer tests.

Writes under tests/fixtures/tokenizer/:
  smollm2.txt          ids for the default model (SmolLM2, BPE, pre "smollm")
  smollm2-pre-*.txt    ids for the same vocabulary under other pre-tokenizers
                       (tokenizer.ggml.pre rewritten in a vocab-only copy)
  spm-tiny.gguf        a small SentencePiece-style ("llama") vocabulary, vocab only
  spm-tiny.txt         ids for it
  chat.txt             chat template renderings (Jinja, as the model files' templates give them)

Fixture lines: ADD_SPECIAL PARSE_SPECIAL TEXT_HEX IDS DETOK_HEX, where IDS is a
comma-separated list, DETOK_HEX is llama_detokenize(ids, remove_special=False,
unparse_special=True), and "-" stands for an empty field.

Usage: /work/ref/venv/bin/python scripts/gen-token-fixtures.py [MODEL]
(needs llama-cpp-python, gguf, numpy and jinja2).
"""
import collections
import ctypes
import math
import os
import sys
import tempfile

import gguf
import numpy as np
import llama_cpp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "fixtures", "tokenizer")
MODEL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
    ROOT, "models", "SmolLM2-135M-Instruct.Q4_1.gguf")

SMOL_SYSTEM = ("<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
               "Hugging Face<|im_end|>\n")

# Strings as bytes: most are UTF-8 text, a few are deliberately invalid.
STRINGS = [s.encode() if isinstance(s, str) else s for s in [
    "",
    " ",
    "Hello world",
    "Hello, world! How are you today?",
    "What is Rust?",
    "The quick brown fox jumps over the lazy dog.",
    "  leading spaces",
    "trailing spaces   ",
    "multiple    spaces   between     words",
    "line one\nline two\n\nline four",
    "\n\n\n",
    "tabs\tand\t\ttabs",
    "mixed \t \n whitespace \r\n end",
    "I'm sure you're right, it's what we've said, they'll go and he'd agree.",
    "DON'T SHOUT, IT'S LOUD",
    "café naïve résumé façade über",
    "Ça va? Élève, ÀÉÎÕÜ",
    "日本語のテキストです。",
    "中文文本测试，你好世界！",
    "한국어 텍스트",
    "Привет, мир! Как дела?",
    "مرحبا بالعالم",
    "שלום עולם",
    "नमस्ते दुनिया",
    "emoji 😀🎉👍🏽 and 🇫🇷 flags",
    "👨‍👩‍👧‍👦 family",
    "1234567890",
    "3.14159 and 2.71828",
    "Call 555-0123 or +1 (800) 123-4567",
    "12345678901234567890123456789",
    "In 2024, 1,000,000 people paid $19.99 each.",
    "x² + y³ = z½ and ⅓ ⅔ Ⅻ ٣٤٥",
    "def fib(n):\n    if n < 2:\n        return n\n    return fib(n-1) + fib(n-2)\n",
    "#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
    "for (int i = 0; i < 10; ++i) { a[i] = b[i] * 2; }",
    "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null}}",
    "English, Français, Deutsch, 日本語, and Ελληνικά mixed",
    "mixedCASE camelCase snake_case kebab-case SCREAMING_CASE",
    "!!!???...,,,;;;:::",
    "a---b___c...d",
    "http://example.com/path?query=1&x=y#frag",
    "user@example.com",
    "The year 1999 and the number 007",
    "supercalifragilisticexpialidocious",
    "Ünïcödé sträße naïveté",
    "\u00a0non-breaking\u00a0space and\u2003em space",
    "zero\u200bwidth and soft\u00adhyphen",
    "<|im_start|>user\nHi<|im_end|>\n",
    SMOL_SYSTEM + "<|im_start|>user\nWhat is Rust?<|im_end|>\n<|im_start|>assistant\n",
    "text <|endoftext|> more text",
    "<|im_start|><|im_end|>",
    "<|im_start",
    "a\x00b",
    b"invalid \xff byte",
    b"truncated caf\xc3",
    b"\x80\x80 stray continuation",
    b"overlong \xc0\xaf slash",
    b"lone surrogate \xed\xa0\x80 here",
    "last code point \U0010ffff and private \ue000",
    "control\x14bytes\x04 without tokens",
]]


# Pieces that random strings are drawn from: every character class the
# pre-tokenizers treat differently, and special tokens.
RANDOM_POOL = [
    "a", "Z", "hello", "World", "é", "ß", "Ω", "ж", "日本", "中", "한", "ק", "ع", "ह", "ก",
    "0", "7", "42", "1234", "٣", "½", "Ⅻ", "²",
    " ", "  ", "\t", "\n", "\r\n", "\n\n", "\u00a0", "\u3000", "\u2009",
    "'", "'s", "'t", "'re", "'LL", "'D", "\"", ".", ",", "!", "?", "...", "-", "_", "+", "=",
    "<", ">", "|", "$", "^", "~", "`", "(", ")", "[", "]", "{", "}", "#", "@", "&", "*", "/",
    "\\", "😀", "👍🏽", "🇫🇷", "\u200d", "\u0301", "\ufe0f", "\x00", "\x7f",
    "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_", "<repo_name>",
]


def random_strings(n, seed=1234):
    import random
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        k = rng.randint(1, 24)
        out.append("".join(rng.choice(RANDOM_POOL) for _ in range(k)).encode())
    return out


def write_vocab_facts(path, vocab):
    n = llama_cpp.llama_vocab_n_tokens(vocab)
    lines = [
        "n_vocab %d" % n,
        "bos %d" % llama_cpp.llama_vocab_bos(vocab),
        "eos %d" % llama_cpp.llama_vocab_eos(vocab),
        "eot %d" % llama_cpp.llama_vocab_eot(vocab),
        "add_bos %d" % llama_cpp.llama_vocab_get_add_bos(vocab),
        "add_eos %d" % llama_cpp.llama_vocab_get_add_eos(vocab),
        "eog %s" % ",".join(str(i) for i in range(n) if llama_cpp.llama_vocab_is_eog(vocab, i)),
        "control %s" % ",".join(str(i) for i in range(n)
                                if llama_cpp.llama_vocab_is_control(vocab, i)),
    ]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s" % os.path.relpath(path, ROOT))


def vocab_of(path):
    llm = llama_cpp.Llama(model_path=path, vocab_only=True, verbose=False)
    return llm, llama_cpp.llama_model_get_vocab(llm.model)


def tokenize(vocab, text, add_special, parse_special):
    n = len(text) + 8
    arr = (llama_cpp.llama_token * n)()
    k = llama_cpp.llama_tokenize(vocab, text, len(text), arr, n, add_special, parse_special)
    assert k >= 0, k
    return list(arr[:k])


def detokenize(vocab, ids):
    arr = (llama_cpp.llama_token * max(1, len(ids)))(*ids)
    cap = 64 + 64 * len(ids)
    buf = ctypes.create_string_buffer(cap)
    k = llama_cpp.llama_detokenize(vocab, arr, len(ids), buf, cap, False, True)
    assert k >= 0, k
    return buf.raw[:k]


def write_cases(path, vocab, strings, modes):
    lines = []
    for s in strings:
        for add_special, parse_special in modes:
            ids = tokenize(vocab, s, add_special, parse_special)
            det = detokenize(vocab, ids)
            lines.append("%d %d %s %s %s" % (
                add_special, parse_special, s.hex() or "-",
                ",".join(map(str, ids)) or "-", det.hex() or "-"))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s (%d cases)" % (os.path.relpath(path, ROOT), len(lines)))


def copy_kv(reader, writer, skip=()):
    """Copy the metadata of reader into writer (no tensors), except keys in skip."""
    for key, field in reader.fields.items():
        if key.startswith("GGUF.") or key in skip or key == "general.architecture":
            continue
        vtype = field.types[0]
        if vtype == gguf.GGUFValueType.STRING:
            writer.add_string(key, bytes(field.parts[-1]).decode("utf-8"))
        elif vtype == gguf.GGUFValueType.ARRAY:
            sub = field.types[1]
            if sub == gguf.GGUFValueType.STRING:
                vals = [bytes(field.parts[i]) for i in field.data]
                writer.add_array(key, vals)
            else:
                vals = [field.parts[i][0].item() for i in field.data]
                writer.add_key_value(key, vals, vtype, sub_type=sub)
        else:
            writer.add_key_value(key, field.parts[-1][0].item(), vtype)


def pre_variant(model, pre, tmpdir):
    reader = gguf.GGUFReader(model)
    path = os.path.join(tmpdir, "smollm2-%s.gguf" % pre)
    w = gguf.GGUFWriter(path, "llama")
    copy_kv(reader, w, skip=("tokenizer.ggml.pre",))
    w.add_string("tokenizer.ggml.pre", pre)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


# ---- a small SentencePiece-style vocabulary ----

# A fixed corpus, so that the vocabulary is the same wherever this runs.
SPM_CORPUS = """
wick runs quantized language models from GGUF files on the processor and on graphics cards.
A model file holds the weights of every layer, the vocabulary of the tokenizer and the chat
template. The tokenizer splits the text into tokens, the model reads the tokens and predicts
the next one, and the sampler chooses it. The tokens are turned back into text as they come.
Every weight matrix is stored in blocks of thirty two or two hundred fifty six numbers with a
scale, and the matrix multiplication reads the blocks directly. The quantized form is fast and
small; the precise form keeps more of the original numbers; the float form is the reference.
The tests compare the results with the reference implementation on the same file, the same
prompt and the same number of threads. A test that can fail compares against an independent
reference, prints the values it saw, and names the file, the tensor and the key it read.
The command line has subcommands for running a model, measuring the speed of matrix products,
comparing the logits of two runs, inspecting a file and writing a requantized copy of it.
Hello world! How are you today? What is the capital of France? The quick brown fox jumps
over the lazy dog. She sells sea shells by the sea shore. Peter Piper picked a peck of
pickled peppers. There are three hundred and sixty five days in a year, twelve months and
fifty two weeks. Numbers like 1234 and 3.14159 and dates like 2024-05-17 appear in text too.
"""


def spm_corpus():
    return SPM_CORPUS


def build_spm_vocab():
    """Pieces: <unk> <s> </s>, the 256 byte tokens, the characters of a corpus,
    and its frequent word pieces (with U+2581 for the space before a word),
    scored by log frequency so longer frequent pieces win."""
    text = spm_corpus()
    words = collections.Counter("\u2581" + w for w in text.split())
    counts = collections.Counter()
    for w, c in words.items():
        for i in range(len(w)):
            for j in range(i + 2, min(len(w), i + 8) + 1):
                counts[w[i:j]] += c
    chars = sorted({ch for w in words for ch in w} | set("\u2581abcdefghijklmnopqrstuvwxyz"))
    pieces = [p for p, c in counts.most_common() if c >= 3][:1500]
    tokens = ["<unk>", "<s>", "</s>"]
    types = [2, 3, 3]
    scores = [0.0, 0.0, 0.0]
    for b in range(256):
        tokens.append("<0x%02X>" % b)
        types.append(6)
        scores.append(0.0)
    seen = set(tokens)
    for i, ch in enumerate(chars):
        if ch not in seen:
            seen.add(ch)
            tokens.append(ch)
            types.append(1)
            scores.append(-1000.0 - i)
    for p in pieces:
        if p not in seen:
            seen.add(p)
            tokens.append(p)
            types.append(1)
            scores.append(round(math.log(counts[p]) * len(p), 3) - 100.0)
    # A user-defined token and a control token, to exercise special splitting.
    for t, ty in (("<tool>", 4), ("<|turn|>", 3)):
        tokens.append(t)
        types.append(ty)
        scores.append(0.0)
    return tokens, scores, types


def write_spm(path):
    tokens, scores, types = build_spm_vocab()
    w = gguf.GGUFWriter(path, "llama")
    w.add_context_length(256)
    w.add_embedding_length(64)
    w.add_block_count(1)
    w.add_feed_forward_length(128)
    w.add_head_count(4)
    w.add_head_count_kv(4)
    w.add_rope_dimension_count(16)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([float(np.float32(s)) for s in scores])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    print("wrote %s (%d tokens, %d bytes)" % (os.path.relpath(path, ROOT), len(tokens),
                                               os.path.getsize(path)))


# ---- chat templates ----

TEMPLATES = {
    # Meta-Llama-3-8B-Instruct
    "llama3": "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
    # Llama-2-7b-chat-hf
    "llama2": "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}",
    # HuggingFaceH4/zephyr-7b-beta
    "zephyr": "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ '<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == 'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif %}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% endfor %}",
    # Qwen2.5-style ChatML (default system prompt in an else branch; tools left out)
    "qwen2": "{%- if messages[0]['role'] == 'system' %}\n    {{- '<|im_start|>system\\n' + messages[0]['content'] + '<|im_end|>\\n' }}\n{%- else %}\n    {{- '<|im_start|>system\\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\\n' }}\n{%- endif %}\n{%- for message in messages %}\n    {%- if (message.role == \"user\") or (message.role == \"system\" and not loop.first) or (message.role == \"assistant\") %}\n        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n    {%- endif %}\n{%- endfor %}\n{%- if add_generation_prompt %}\n    {{- '<|im_start|>assistant\\n' }}\n{%- endif %}\n",
    # Plain ChatML (no default system prompt)
    "chatml": "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}",
}

CONVERSATIONS = [
    [("user", "What is Rust?")],
    [("system", "You are terse."), ("user", "Hi there")],
    [("user", "Hello"), ("assistant", "Hi! How can I help?"), ("user", "Tell me a joke.")],
    [("system", "Be kind."), ("user", "  padded question  "),
     ("assistant", " padded answer "), ("user", "And then?")],
    [("user", "multi\nline\ncontent")],
]


def render_jinja(tmpl, msgs, add_gen, bos, eos):
    import jinja2

    def raise_exception(msg):
        raise jinja2.exceptions.TemplateError(msg)

    env = jinja2.Environment(loader=jinja2.BaseLoader(), trim_blocks=True, lstrip_blocks=True)
    t = env.from_string(tmpl)
    out = t.render(messages=[{"role": r, "content": c} for r, c in msgs],
                   add_generation_prompt=add_gen, bos_token=bos, eos_token=eos,
                   raise_exception=raise_exception)
    # The tokenizer adds BOS itself: the rendering leaves a leading one out.
    if bos and out.startswith(bos):
        out = out[len(bos):]
    return out


def write_chat(path, smol_template):
    """Lines: STYLE ADD_GEN N_MSGS then ROLE_HEX CONTENT_HEX per message, then EXPECTED_HEX.
    Templates are written first as: TEMPLATE NAME HEX."""
    templates = dict(TEMPLATES)
    templates["smollm2"] = smol_template
    lines = []
    for name, tmpl in templates.items():
        lines.append("TEMPLATE %s %s" % (name, tmpl.encode().hex()))
    for name, tmpl in templates.items():
        for msgs in CONVERSATIONS:
            for add_gen in (True, False):
                if name == "llama2" and msgs[-1][0] != "user":
                    continue
                exp = render_jinja(tmpl, msgs, add_gen, "<s>", "</s>")
                parts = ["CASE", name, str(int(add_gen)), str(len(msgs))]
                for r, c in msgs:
                    parts += [r.encode().hex(), c.encode().hex() or "-"]
                parts.append(exp.encode().hex() or "-")
                lines.append(" ".join(parts))
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("wrote %s (%d lines)" % (os.path.relpath(path, ROOT), len(lines)))


def main():
    os.makedirs(OUT, exist_ok=True)
    llm, vocab = vocab_of(MODEL)
    modes = [(0, 1), (0, 0), (1, 1)]
    write_cases(os.path.join(OUT, "smollm2.txt"), vocab, STRINGS, modes)
    write_cases(os.path.join(OUT, "smollm2-random.txt"), vocab, random_strings(150),
                [(0, 1), (0, 0)])
    write_vocab_facts(os.path.join(OUT, "smollm2-vocab.txt"), vocab)
    smol_template = llm.metadata["tokenizer.chat_template"]
    del llm

    with tempfile.TemporaryDirectory() as tmp:
        for pre in ("llama-bpe", "qwen2", "gpt-2", "default", "starcoder"):
            path = pre_variant(MODEL, pre, tmp)
            llm, v = vocab_of(path)
            write_cases(os.path.join(OUT, "smollm2-pre-%s.txt" % pre), v,
                        STRINGS + random_strings(100, seed=len(pre)), [(0, 1), (1, 0)])
            del llm

    spm = os.path.join(OUT, "spm-tiny.gguf")
    write_spm(spm)
    llm, v = vocab_of(spm)
    spm_strings = STRINGS + [b"<tool>call<|turn|>next", b" <s> literal bos", b"\xe2\x96\x81 already"]
    write_cases(os.path.join(OUT, "spm-tiny.txt"), v, spm_strings, [(1, 1), (0, 0), (0, 1)])
    write_cases(os.path.join(OUT, "spm-tiny-random.txt"), v, random_strings(100, seed=99),
                [(1, 1)])
    write_vocab_facts(os.path.join(OUT, "spm-tiny-vocab.txt"), v)
    del llm

    write_chat(os.path.join(OUT, "chat.txt"), smol_template)


if __name__ == "__main__":
    main()
