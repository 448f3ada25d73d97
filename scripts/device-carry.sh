#!/usr/bin/env bash
# Prepare what a GPU machine needs, as folders of REPO/.devcarry/ (ignored by git):
#   tree/  this checkout's files (tracked and new, no build outputs, no models)
#   ma/ mb/  the default model split in two parts, each under the 64 MiB a call carries.
# Then, back to back while the machine is warm:
#   call 1, carry [".devcarry/ma"]:  mkdir -p /root/m && cp .devcarry/ma/* /root/m/
#   call 2, carry [".devcarry/tree", ".devcarry/mb"]:
#     cp .devcarry/mb/* /root/m/ && cat /root/m/part* > /root/model.gguf &&
#     cd .devcarry/tree && scripts/device-run.sh /root/model.gguf $OUT
# Usage: scripts/device-carry.sh REPO [MODEL]
set -euo pipefail
repo=$1
model=${2:-models/SmolLM2-135M-Instruct.Q4_1.gguf}
dest=$repo/.devcarry
rm -rf "$dest/tree" "$dest/ma" "$dest/mb"
mkdir -p "$dest/tree" "$dest/ma" "$dest/mb"
git ls-files -co --exclude-standard | grep -v '^models/' | tar -cf - -T - | tar -xf - -C "$dest/tree"
tmp=$(mktemp -d)
split -b 50M "$model" "$tmp/part"
mv "$tmp/partaa" "$dest/ma/"
mv "$tmp"/part* "$dest/mb/"
rmdir "$tmp"
sha256sum "$model"
du -sh "$dest"/*
