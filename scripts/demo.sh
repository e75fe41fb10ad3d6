#!/usr/bin/env bash
# Set up, then evaluate every search setup on the bundled Northwind benefits PDFs and their
# golden questions. The report lands in ragtune-out/ (or $RAGTUNE_OUT_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/ragtune evaluate \
  --docs examples/data/northwind-benefits/docs \
  --golden examples/data/northwind-benefits/golden_pages.jsonl \
  --out "${RAGTUNE_OUT_DIR:-ragtune-out}" "$@"
