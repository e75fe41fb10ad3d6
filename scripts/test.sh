#!/usr/bin/env bash
# Set up, then run the whole test suite (unit, functions and integration tests with the real
# Milvus Lite and the real local embedding model). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
set +e
.venv/bin/python -m pytest "$@"
code=$?
set -e
# pytest exits 5 when no test was collected: that is a failure here.
exit "$code"
