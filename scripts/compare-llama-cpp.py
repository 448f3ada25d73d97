#!/usr/bin/env python3
"""Run the same GGUF file, prompts and thread count through wick (libwick.so, by ctypes)
and llama.cpp (llama-cpp-python), and report side by side:

  tokens    do the prompts' token ids agree
  logits    max |wick - llama.cpp| over the first-step logits, and the top tokens
  greedy    how many 32-token greedy continuations are equal
  speed     prefill of a PROMPT_TOKENS-token prompt (tokens/s) and decode (tokens/s),
            medians of --repeats runs, the two programs alternating so that a busy
            machine slows both alike

llama.cpp runs with an f32 KV cache and no flash attention (the arithmetic wick does).
Its decode loop is driven from Python (eval one token, argmax of the logits); that adds
well under 1% at these speeds.

usage: compare-llama-cpp.py [-m MODEL] [-t THREADS] [--repeats N] [--decode N] [--form F]
                            [--no-check] [--out FILE]
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "py"))
from wick_model_ctypes import Lib, Model  # noqa: E402

PROMPTS = [
    "What is Rust?", "The capital of France is", "Once upon a time, in a small village by the sea,",
    "def fibonacci(n):\n    ", "1, 2, 3, 4, 5,", "The three primary colors are",
    "Explain quantum computing in simple terms.", "Water boils at", "Les chats sont des animaux",
    "import numpy as np\nx = np.", "The best way to learn a new language is",
]
LONG_TEXT = (
    "The history of computing is a story of people trying to make machines do arithmetic faster "
    "and more reliably than people could. Early mechanical calculators added and multiplied with "
    "gears; punched cards carried data and programs through tabulating machines; vacuum tubes and "
    "then transistors made electronic computers possible. Each generation brought smaller, cheaper "
    "and faster machines, and with them new languages, from assembly to Fortran, C, and later Rust, "
    "which promise both speed and safety. Today a phone holds more computing power than the "
    "machines that guided the first missions to the Moon, and language models run on laptops, "
    "predicting one token after another from the patterns of the text they were trained on. "
) * 4


def llama(model, threads, logits_all):
    import llama_cpp
    return llama_cpp.Llama(model, n_ctx=1024, n_batch=512, n_ubatch=512, n_threads=threads,
                           n_threads_batch=threads, logits_all=logits_all, type_k=0, type_v=0,
                           flash_attn=False, verbose=False)


def llama_last_logits(llm):
    return np.array(llm.scores[llm.n_tokens - 1], dtype=np.float32)


def check_agreement(lib, args, out):
    llm = llama(args.model, args.threads, True)
    n_vocab = llm.n_vocab()
    same_ids, worst, top_same, greedy_same = 0, 0.0, 0, 0
    with Model(lib, args.model, form=args.form, threads=args.threads, n_ctx=1024) as m:
        for text in PROMPTS:
            ids = llm.tokenize(text.encode(), add_bos=True, special=False)
            same_ids += m.tokenize(text) == ids
            llm.reset()
            llm.eval(ids)
            ref = llama_last_logits(llm)
            got = m.logits(ids, n_vocab)
            worst = max(worst, float(np.abs(ref - got).max()))
            top_same += int(ref.argmax()) == int(got.argmax())
            greedy, logits = [], ref
            for _ in range(32):
                tok = int(np.argmax(logits))
                greedy.append(tok)
                llm.eval([tok])
                logits = llama_last_logits(llm)
            mine, _, _ = m.generate(ids, 32)
            greedy_same += mine == greedy
    n = len(PROMPTS)
    out(f"token ids equal: {same_ids}/{n}")
    out(f"first-step logits: max abs diff {worst:.4f} (all {n_vocab} logits), top token equal {top_same}/{n}")
    out(f"greedy 32-token continuations equal: {greedy_same}/{n}")
    del llm


def time_llama(llm, prompt, n_decode):
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(prompt)
    prefill = time.perf_counter() - t0
    tok = int(np.argmax(llama_last_logits(llm)))
    t0 = time.perf_counter()
    for _ in range(n_decode):
        llm.eval([tok])
        tok = int(np.argmax(llama_last_logits(llm)))
    decode = time.perf_counter() - t0
    return len(prompt) / prefill, n_decode / decode


def time_wick(m, prompt, n_decode):
    _, _, st = m.generate(prompt, n_decode + 1)
    return len(prompt) / (st.prefill_ms / 1e3), st.n_decode / (st.decode_ms / 1e3)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-m", "--model", default=os.path.join(HERE, "..", "models", "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("-t", "--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--decode", type=int, default=64)
    ap.add_argument("--prompt-tokens", type=int, default=128)
    ap.add_argument("--form", default="quantized")
    ap.add_argument("--lib", default=os.environ.get("WICK_LIB", os.path.join(HERE, "..", "build", "libwick.so")))
    ap.add_argument("--no-check", action="store_true", help="timing only")
    ap.add_argument("--out", help="also write the report to this file")
    args = ap.parse_args()
    lines = []

    def out(s):
        print(s, flush=True)
        lines.append(s)

    import llama_cpp
    out(f"model {os.path.basename(args.model)}, threads {args.threads}, wick form {args.form}, "
        f"llama-cpp-python {llama_cpp.__version__}")
    lib = Lib(args.lib)
    if not args.no_check:
        check_agreement(lib, args, out)

    llm = llama(args.model, args.threads, False)
    prompt = llm.tokenize(LONG_TEXT.encode(), add_bos=True, special=False)[: args.prompt_tokens]
    assert len(prompt) == args.prompt_tokens
    w_pre, w_dec, l_pre, l_dec = [], [], [], []
    with Model(lib, args.model, form=args.form, threads=args.threads, n_ctx=1024) as m:
        time_wick(m, prompt[:8], 4)  # warm-up: page in the weights, start the threads
        time_llama(llm, prompt[:8], 4)
        for r in range(args.repeats):
            order = [("wick", m), ("llama", llm)] if r % 2 == 0 else [("llama", llm), ("wick", m)]
            for name, h in order:
                if name == "wick":
                    p, d = time_wick(h, prompt, args.decode)
                    w_pre.append(p)
                    w_dec.append(d)
                else:
                    p, d = time_llama(h, prompt, args.decode)
                    l_pre.append(p)
                    l_dec.append(d)
    med = statistics.median
    out(f"prefill ({args.prompt_tokens} tokens): wick {med(w_pre):.1f} tok/s, llama.cpp {med(l_pre):.1f} tok/s, "
        f"ratio {med(w_pre) / med(l_pre):.2f}x   (medians of {args.repeats})")
    out(f"decode ({args.decode} tokens): wick {med(w_dec):.1f} tok/s, llama.cpp {med(l_dec):.1f} tok/s, "
        f"ratio {med(w_dec) / med(l_dec):.2f}x")
    out("per run (wick prefill/decode, llama.cpp prefill/decode tok/s): " + "; ".join(
        f"{a:.0f}/{b:.0f} {c:.0f}/{d:.0f}" for a, b, c, d in zip(w_pre, w_dec, l_pre, l_dec)))
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
