#!/bin/sh
# Remake the qgen and qdiff tables of the CPU (bench/results/gen-cpu-qgen.txt and
# bench/results/qdiff-cpu.txt): the default model and its Q8_0 and Q4_K_M requantizations
# by `wick quantize`, each in the forms quantized, precise and f32, one thread, the
# chat-wrapped "What is Rust?" (34 tokens), greedy.
#   qgen:  wick bench gen -t 1 --matmul FORM -n 20 --rounds 3 (a fresh load per round)
#   qdiff: wick logits (first-step logits) per file and form, compared with wick diff
# usage: scripts/gen-model-qtables.sh [BUILD_DIR] [OUT_DIR]   (run it on a quiet machine)
set -eu
build=${1:-build}
out=${2:-bench/results}
model=models/SmolLM2-135M-Instruct.Q4_1.gguf
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$build/wick" quantize "$model" "$tmp/q8_0.gguf" q8_0 >/dev/null
"$build/wick" quantize "$model" "$tmp/q4_k_m.gguf" q4_k_m >/dev/null
cp "$model" "$tmp/q4_1.gguf"
load=$(cut -d' ' -f1-3 /proc/loadavg)
{
    echo "# qgen on the CPU: wick bench gen -m FILE -t 1 --matmul FORM --label FILE-cpu-FORM -n 20 --rounds 3"
    echo "# prompt: \"What is Rust?\" in the chat template (34 tokens); greedy; $(uname -m), 1 thread; load average at the start: $load"
    echo "# files: SmolLM2-135M-Instruct.Q4_1.gguf and its Q8_0 and Q4_K_M requantizations by wick quantize"
    for f in q8_0 q4_k_m q4_1; do
        for form in quantized precise f32; do
            "$build/wick" bench gen -m "$tmp/$f.gguf" -t 1 --matmul "$form" --label "$f-cpu-$form" -n 20 --rounds 3 2>&1
        done
    done
    echo "# load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$out/gen-cpu-qgen.txt"
for f in q8_0 q4_k_m q4_1; do
    for form in quantized precise f32; do
        "$build/wick" logits -m "$tmp/$f.gguf" -t 1 --matmul "$form" -o "$tmp/$f-cpu-$form.f32" 2>/dev/null
    done
done
{
    echo "# qdiff on the CPU: wick logits -m FILE -t 1 --matmul FORM -o FILE-cpu-FORM.f32; wick diff A B"
    echo "# first-step logits (49152) after the chat-wrapped prompt \"What is Rust?\" (34 tokens)"
    for pair in "q8_0-cpu-quantized q8_0-cpu-precise" "q8_0-cpu-quantized q8_0-cpu-f32" "q8_0-cpu-precise q8_0-cpu-f32" \
                "q4_k_m-cpu-quantized q4_k_m-cpu-precise" "q4_k_m-cpu-quantized q4_k_m-cpu-f32" "q4_k_m-cpu-precise q4_k_m-cpu-f32" \
                "q4_1-cpu-quantized q4_1-cpu-precise" "q4_1-cpu-quantized q4_1-cpu-f32" "q4_1-cpu-precise q4_1-cpu-f32" \
                "q4_k_m-cpu-f32 q8_0-cpu-f32" "q4_1-cpu-f32 q8_0-cpu-f32"; do
        set -- $pair
        printf 'max|%s - %s|: %s\n' "$1" "$2" "$("$build/wick" diff "$tmp/$1.f32" "$tmp/$2.f32" | tr '\n' ' ')"
    done
} > "$out/qdiff-cpu.txt"
