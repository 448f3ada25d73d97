#!/usr/bin/env python3
"""Make the model fixtures that tests/py/test_model_llama_cpp.py compares wick against.

For each prompt, llama.cpp (through llama-cpp-python, same GGUF file) gives:
  ids      the prompt's token ids
  top      the 100 largest first-step logits, as [id, logit] pairs, and max
  greedy   the greedy continuation of 32 tokens (token ids)
  gaps     at each greedy step, llama.cpp's margin between its first and second logit
           (a small margin is a near-tie that rounding may turn either way)
llama.cpp runs with an f32 KV cache and no flash attention, so that its attention is
the same arithmetic as wick's (its default f16 cache rounds keys and values).

usage: gen-model-fixtures.py MODEL.gguf OUT.json [--threads 2] [--quantize TYPE]
--quantize records that MODEL is `wick quantize DEFAULT MODEL TYPE` of the default model, so
the test can remake it (and confirm it by its SHA-256).
(needs llama-cpp-python; the repository's CI never runs this, it only reads the output)
"""
import argparse
import hashlib
import json
import os
import sys

import numpy as np

PROMPTS = [
    ("What is Rust?", False),
    ("The capital of France is", False),
    ("Once upon a time, in a small village by the sea,", False),
    ("def fibonacci(n):\n    ", False),
    ("1, 2, 3, 4, 5,", False),
    ("The three primary colors are", False),
    ("Explain quantum computing in simple terms.", False),
    ("Water boils at", False),
    ("Les chats sont des animaux", False),
    ("import numpy as np\nx = np.", False),
    ("The best way to learn a new language is", False),
    ("<|im_start|>user\nWhat is the tallest mountain?<|im_end|>\n<|im_start|>assistant\n", True),
]
N_GREEDY = 32
N_TOP = 100


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--quantize", help="the wick quantize type that made MODEL from the default model")
    args = ap.parse_args()

    import llama_cpp

    llm = llama_cpp.Llama(args.model, n_ctx=512, n_batch=512, n_threads=args.threads,
                          n_threads_batch=args.threads, logits_all=True, type_k=0, type_v=0,
                          flash_attn=False, verbose=False)
    cases = []
    for text, special in PROMPTS:
        ids = llm.tokenize(text.encode(), add_bos=True, special=special)
        llm.reset()
        llm.eval(ids)
        first = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        order = np.argsort(-first, kind="stable")[:N_TOP]
        greedy, gaps = [], []
        logits = first
        for _ in range(N_GREEDY):
            tok = int(np.argmax(logits))
            two = np.partition(logits, -2)[-2:]
            gaps.append(round(float(two[1] - two[0]), 4))
            greedy.append(tok)
            llm.eval([tok])
            logits = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)
        cases.append({
            "text": text,
            "special": special,
            "ids": [int(i) for i in ids],
            "max": float(first.max()),
            "top": [[int(i), round(float(first[i]), 5)] for i in order],
            "greedy": greedy,
            "gaps": gaps,
            "greedy_text": llm.detokenize(greedy).decode("utf-8", "replace"),
        })
        print(f"{text[:40]!r}: {len(ids)} ids, top {order[0]}, greedy {cases[-1]['greedy_text'][:50]!r}",
              file=sys.stderr)
    doc = {
        "model": os.path.basename(args.model),
        "sha256": sha256(args.model),
        "llama_cpp_python": llama_cpp.__version__,
        "threads": args.threads,
        "kv_cache": "f32",
        "n_vocab": llm.n_vocab(),
        "cases": cases,
    }
    if args.quantize:
        doc["quantize"] = args.quantize
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
