"""Hostile model files: `wick run` refuses each with exit status 1 and a clear message.

Each file is a well-formed GGUF file (the gguf package's GGUFWriter) holding a tiny
Llama model whose metadata or tensors are hostile: zero or non-dividing head counts,
a billion blocks, a zero context, a vocabulary that disagrees with the embedding,
missing, mis-shaped or unknown-type tensors, an unknown architecture, token ids out
of range, a KV cache that cannot fit. The files are written at test time into a
temporary directory by scripts/gen-hostile-models.py (none is committed).

For each: the exit status, a 'wick: error: ' line, and the words the message must
contain (the key or tensor, and the numbers). A few files are not errors (weights
of NaN, alignment 1): those must run or fail cleanly, never crash. The unchanged
baseline must run. Every file also goes through `wick inspect`, which must print it.

Run as a script; env WICK_BIN, WICK_SOURCE_DIR. Exits non-zero on any failure.
"""
import importlib.util
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_run import Failure, Suite, error_line, expect, run, run_is_built, show, tail  # noqa: E402

GEN = os.path.join(os.environ.get("WICK_SOURCE_DIR", "."), "scripts", "gen-hostile-models.py")
spec = importlib.util.spec_from_file_location("gen_hostile_models", GEN)
gen = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gen)

RUN = ["-p", "Hello", "-n", "4", "-t", "1"]
N_VOCAB = 262  # the baseline's vocabulary: 3 specials, 256 bytes, 3 merged pairs

# variant -> (exit status, words the message must contain). None: "runs or fails
# cleanly" (exit 0 or 1, never a crash).
REFUSED = {
    "zero_heads": (1, ["'llama.attention.head_count' is 0"]),
    "zero_kv_heads": (1, ["'llama.attention.head_count_kv' is 0"]),
    "heads_not_dividing": (1, ["embedding_length 64 is not divisible by head_count 5"]),
    "kv_heads_not_dividing": (1, ["head_count 4 is not divisible by head_count_kv 3"]),
    "kv_heads_above_heads": (1, ["head_count 4 is not divisible by head_count_kv 8"]),
    "odd_head_dim": (1, ["head dimension 1"]),
    "billion_blocks": (1, ["'llama.block_count' is 1000000000"]),
    "zero_blocks": (1, ["'llama.block_count' is 0"]),
    "more_blocks_than_tensors": (1, ["missing tensor 'blk.2.attn_norm.weight'"]),
    "zero_context": (1, ["'llama.context_length' is 0"]),
    "zero_width": (1, ["'llama.embedding_length' is 0"]),
    "huge_width": (1, ["'llama.embedding_length' is 1099511627776"]),
    "negative_blocks": (1, ["llama.block_count", "-2"]),
    "blocks_as_string": (1, ["'llama.block_count' is a string"]),
    "missing_width": (1, ["llama.embedding_length"]),
    "vocab_size_disagrees": (1, ["'llama.vocab_size' is 100",
                                 f"token_embd.weight has {N_VOCAB} rows"]),
    "tokenizer_bigger_than_embedding": (1, [f"tokenizer has {N_VOCAB} tokens",
                                            "token_embd.weight only 200 rows"]),
    "missing_tensor": (1, ["missing tensor 'blk.1.ffn_down.weight'"]),
    "missing_embedding": (1, ["missing tensor 'token_embd.weight'"]),
    "missing_norm": (1, ["missing tensor 'output_norm.weight'"]),
    "misshaped_tensor": (1, ["tensor 'blk.0.attn_q.weight' has shape [64, 96", "[64, 64]"]),
    "misshaped_kv_tensor": (1, ["tensor 'blk.0.attn_k.weight' has shape [64, 64", "[64, 32]"]),
    "misshaped_output": (1, ["tensor 'output.weight' has shape [64, 100",
                             f"[64, {N_VOCAB}]"]),
    "three_dim_tensor": (1, ["tensor 'blk.0.ffn_up.weight' has shape [64, 64, 2"]),
    "norm_wrong_length": (1, ["tensor 'blk.0.attn_norm.weight' has shape [32", "[64]"]),
    "unsupported_tensor_type": (1, ["blk.0.attn_q.weight", "unknown or removed type id 16"]),
    "unknown_architecture": (1, ["architecture 'gpt-neox' is not supported"]),
    "missing_architecture": (1, ["general.architecture"]),
    "architecture_not_string": (1, ["general.architecture", "uint32"]),
    "bos_out_of_range": (1, ["bos_token_id", "1000000", f"{N_VOCAB}"]),
    "eos_out_of_range": (1, ["eos_token_id", "4000000000", f"{N_VOCAB}"]),
    "token_types_short": (1, ["tokenizer.ggml.token_type", f"{N_VOCAB - 1}"]),
    "token_types_out_of_range": (1, ["token_type", "99"]),
    "missing_tokens": (1, ["tokenizer.ggml.tokens"]),
    "unknown_tokenizer": (1, ["tokenizer.ggml.model 'wordpiece' is not supported"]),
    "kv_cache_too_big": (1, ["KV cache of 1073741824 tokens needs"]),
    "context_above_limit": (1, ["'llama.context_length' is 1099511627776"]),
    "rope_dims_too_big": (1, ["rope.dimension_count 64", "head dimension 16"]),
    "rms_eps_nan": (1, ["llama.attention.layer_norm_rms_epsilon", "nan"]),
    "rope_base_negative": (1, ["'llama.rope.freq_base' is -1"]),
    "bad_chat_template": (1, ["template"]),
}
RUNS = {"valid", "no_chat_template", "alignment_one"}
# Refusals about the machine or the template text rather than the file's contents
# need not name the file.
NOT_ABOUT_THE_FILE = {"kv_cache_too_big", "bad_chat_template"}
# Refused by the GGUF reader itself, so `wick inspect` refuses them too.
UNREADABLE = {"unsupported_tensor_type": "unknown or removed type id 16"}
CLEAN = {"nan_weights", "inf_embedding", "merges_unknown_tokens"}


def check_refused(path, name, status, words):
    _, _, err = expect(["run", "-m", path] + RUN, status, *words)
    if name not in NOT_ABOUT_THE_FILE and os.path.basename(path) not in err:
        raise Failure(f"{name}: the message does not name the file\n{tail(err)}")
    return error_line(err)


def check_runs(path, extra=()):
    rc, out, err = run(["run", "-m", path] + RUN + list(extra))
    if rc != 0:
        raise Failure(f"wick run -m {path}: exit {rc}, expected 0\n{tail(err)}")
    if "decode steps" not in err:
        raise Failure(f"wick run -m {path}: no timing line\n{tail(err)}")
    return f"{len(out)} bytes of text"


def check_clean(path):
    """Exit 0, or 1 with a message: never a crash (run() refuses signals)."""
    for extra in ([], ["--temp", "0.8", "--top-p", "0.9", "--top-k", "5"]):
        rc, _, err = run(["run", "-m", path] + RUN + extra)
        if rc not in (0, 1) or (rc == 1 and "wick: error: " not in err):
            raise Failure(f"wick run -m {path} {show(extra)}: exit {rc}\n{tail(err)}")
    return f"exit {rc}" + (f": {error_line(err)}" if rc else "")


def check_inspect(path, name):
    if name in UNREADABLE:
        return error_line(expect(["inspect", path], 1, os.path.basename(path),
                                 UNREADABLE[name])[2])
    rc, out, err = run(["inspect", path])
    if rc != 0:
        raise Failure(f"wick inspect {path}: exit {rc}\n{tail(err)}")


def main():
    suite = Suite("test_hostile_models")
    with tempfile.TemporaryDirectory(prefix="wick-hostile-") as d:
        paths = {}
        for name in gen.VARIANTS:
            paths[name] = gen.write_variant(name, os.path.join(d, name + ".gguf"))
        listed = set(REFUSED) | RUNS | CLEAN
        for name in gen.VARIANTS:
            if name not in listed:
                suite.case(f"{name}: has an expectation", lambda n=name: (_ for _ in ()).throw(
                    Failure(f"variant {n} is not listed in this test")))
        if not run_is_built():
            for name in paths:
                suite.skip(name, "`wick run` is not built yet")
            suite.finish()
        for name, (status, words) in REFUSED.items():
            suite.case(f"refuses {name}", check_refused, paths[name], name, status, words)
        for name in sorted(RUNS):
            suite.case(f"runs {name}", check_runs, paths[name])
        suite.case("no_chat_template with --chat", lambda: error_line(expect(
            ["run", "-m", paths["no_chat_template"], "--chat"] + RUN, 1, "template")[2]))
        suite.case("kv_cache_too_big with --ctx 64", check_runs, paths["kv_cache_too_big"],
                   ["--ctx", "64"])
        for name in sorted(CLEAN):
            suite.case(f"survives {name}", check_clean, paths[name])
        for name in sorted(paths):
            suite.case(f"inspect {name}", check_inspect, paths[name], name)
    suite.finish()


if __name__ == "__main__":
    main()
