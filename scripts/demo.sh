#!/usr/bin/env bash
# Set up, then search 12 RAG configurations on the bundled Northwind benefits PDFs and their
# golden questions (the default optimizer screen, offline defaults: the packaged embedding model, Milvus Lite,
# the extractive baseline). The report lands in ragtune-out/ (or $RAGTUNE_OUT_DIR).
# Extra arguments go to `ragtune optimize` (for example --max-evals 20 or --optimizer random).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/ragtune optimize \
  --docs examples/data/northwind-benefits/docs \
  --golden examples/data/northwind-benefits/golden_pages.jsonl \
  --max-evals 12 \
  --out "${RAGTUNE_OUT_DIR:-ragtune-out}" "$@"
