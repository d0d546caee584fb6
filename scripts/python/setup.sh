#!/usr/bin/env bash
# The Python test environment, made once: .venv/ (FLASHCORE_VENV) with the
# GPU machine's torch (2.11, from PyPI: with its CUDA libraries, which it
# needs to import even where there is no GPU), pytest and numpy. Each pip
# step is bounded by FLASHCORE_SETUP_TIMEOUT (default 1200 s).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
venv=${FLASHCORE_VENV:-$root/.venv}
limit=${FLASHCORE_SETUP_TIMEOUT:-1200}
torch_version=2.11.0
if "$venv/bin/python" -c "import torch, pytest, numpy
assert torch.__version__.startswith('$torch_version')" 2>/dev/null; then
  exit 0
fi
echo "scripts/python/setup.sh: torch $torch_version, pytest and numpy into $venv"
python3 -m venv "$venv"
timeout "$limit" "$venv/bin/pip" install --quiet --disable-pip-version-check \
  "torch==$torch_version" pytest numpy
