#!/usr/bin/env bash
# Set up, start the test services, then run the whole test suite: unit, functions and
# integration tests with the real Milvus Lite, a Milvus server (Milvus Lite's binary on TCP),
# PostgreSQL with pgvector, an S3 server (moto), Azurite (Blob storage) and the real local
# embedding model. Services are stopped at the
# end, also when tests fail. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services/postgres.sh install

# Headless Chromium for the page tests: Debian's own package (named chromium on Debian 12 and
# 13), driven by Playwright through its executable path; nothing downloads a browser build.
if ! command -v chromium >/dev/null 2>&1; then
  if [ -f /etc/debian_version ] && [ "$(id -u)" = 0 ]; then
    echo "installing chromium (Debian $(cat /etc/debian_version)) for the page tests" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q chromium >/dev/null 2>&1 || { apt-get update -q >/dev/null && apt-get install -y -q chromium >/dev/null; }
  else
    echo "scripts/test.sh: the page tests need chromium: install Debian's chromium package as root" >&2
  fi
fi

stop_services() {
  bash scripts/services/milvus.sh stop || true
  bash scripts/services/postgres.sh stop || true
  bash scripts/services/moto.sh stop || true
  bash scripts/services/azurite.sh stop || true
}
trap stop_services EXIT

bash scripts/services/postgres.sh start >/dev/null
eval "$(bash scripts/services/postgres.sh env)"
bash scripts/services/milvus.sh start >/dev/null
eval "$(bash scripts/services/milvus.sh env)"
bash scripts/services/moto.sh start >/dev/null
eval "$(bash scripts/services/moto.sh env)"
bash scripts/services/azurite.sh start >/dev/null
eval "$(bash scripts/services/azurite.sh env)"

export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
# pytest exits 5 when no test was collected: a failure here, like any non-zero code.
.venv/bin/python -m pytest "$@"
