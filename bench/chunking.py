"""Chunking comparison benchmark: which technique finds the most, and what the comparison costs.

For northwind-benefits and squad-mini, one process, side by side: ``compare_chunking`` with
every model-free technique at three sizes (headings embedded and not), in a fresh output
folder (the embedding cache fills as the comparison runs, so a text that two builds share is
embedded once). It prints the found count of each technique at its best build, the ties
(exact McNemar against the best), and the wall time of the whole comparison against the sum of
its builds' embedding time (the floor: embedding is the part no comparison can skip). The
model is loaded before any timing.

Goal: the squad-mini comparison (all model-free techniques, three sizes) finishes in under
5 minutes on a 2-core machine.

Usage: python bench/chunking.py [--datasets squad-mini,northwind-benefits] [--sizes 64,128,256]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.evaluation.chunking import CompareOptions, compare_chunking  # noqa: E402
from core.models import LocalEmbeddingModel  # noqa: E402

DATA = ROOT / "examples" / "data"
GOLDEN = {"squad-mini": "golden.jsonl", "northwind-benefits": "golden_pages.jsonl"}
GOAL_S = {"squad-mini": 300.0}


def main() -> int:
    """Run the benchmark and print its tables; returns 1 when a goal is missed, else 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default="squad-mini,northwind-benefits")
    parser.add_argument("--sizes", default="64,128,256")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]

    model = LocalEmbeddingModel()
    model.embed_documents(["warm up"])  # load the weights outside every timing
    missed = False
    for name in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        folder = DATA / name
        with tempfile.TemporaryDirectory() as out:
            t0 = time.perf_counter()
            report, _ = compare_chunking(folder / "docs", folder / GOLDEN[name], out_dir=out, embedding_model=model,
                                         options=CompareOptions(sizes=sizes))
            wall = time.perf_counter() - t0
        st = report["settings"]
        n_built = sum(1 for b in report["builds"] if b.get("status") == "ok" and not b.get("same_as"))
        print(f"\n{name}: {report['corpus']['n_documents']} documents, {report['golden']['n_questions']} questions; "
              f"{len(report['builds'])} builds ({n_built} embedded and searched, the rest identical to another); "
              f"budget {st['budget_chars']} characters; {st['counting']} at the {st['grain']} grain")
        print(f"{'technique':<14} {'best build':<28} {'found':>7}  tie")
        order = {m: i for i, m in enumerate(report["ranking"])}
        for t in sorted(report["techniques"], key=lambda t: order.get(t["method"], 99)):
            tie = "best" if t.get("vs_best") is None and t.get("tie") else ("yes" if t.get("tie") else "no")
            print(f"{t['method']:<14} {str(t['best_build']):<28} {t['counted']:>3}/{t['n_scored']:<3}  {tie}")
        embed = report["timings_s"]["embed_s"]
        tm = report["timings_s"]
        print(f"wall {wall:.1f} s; builds' embedding {embed:.1f} s (floor); wall / floor = "
              f"{wall / embed if embed else float('inf'):.2f}")
        print(f"  chunking {tm['chunk_s']:.1f} s, writing collections {tm['index_s']:.1f} s, searching "
              f"{tm['search_s']:.1f} s, the rest {wall - embed - tm['chunk_s'] - tm['index_s'] - tm['search_s']:.1f} s")
        slow = sorted(report["builds"], key=lambda b: -b.get("chunk_s", 0.0))[:3]
        print("  slowest to chunk: " + ", ".join(f"{b['key']} {b['chunk_s']:.1f} s" for b in slow))
        goal = GOAL_S.get(name)
        if goal is not None:
            ok = wall < goal
            missed |= not ok
            print(f"goal: under {goal:.0f} s: {'met' if ok else 'MISSED'} ({wall:.1f} s)")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
