#!/bin/sh
# The Python environment the tests use as an independent reference: numpy and the
# gguf package (GGUF reading and the reference quantizers of the 32-element formats).
set -eu
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then "$PY" -m venv .venv; fi
if ! .venv/bin/python -c "import numpy, gguf" 2>/dev/null; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -r scripts/requirements-test.txt
fi
