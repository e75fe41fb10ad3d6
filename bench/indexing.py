"""Indexing benchmark: how close ``ragtune evaluate`` comes to the embedding floor.

One process, side by side on the same machine:

1. the floor: embedding every distinct chunk text of the corpus once with the local model,
   nothing else (no cache, no store, no search);
2. a cold run of the retrieval evaluation (empty embedding cache, new collection);
3. a warm run (same output folder): the embedding cache and the collection are reused, so
   no text is embedded.

It prints the seconds of each and the ratios run / floor. The model is loaded before any
timing, so loading counts in none of them.

With ``--optimize``, it then measures a cold ``ragtune optimize`` as a new user would run it:
``ragtune optimize --max-evals 8`` on squad-mini (293 questions) in a fresh process with an
empty output folder, against its floor measured in the same run, also in a fresh process:
process start + loading the embedding model the optimize run used + embedding each distinct text
once (the chunk texts of every chunking the optimize run evaluated, the questions, and the
sentences its extractive answerer ranked, read from the run's stored results) + building
each of its collections once (Milvus Lite). Each is run ``--repeat N`` times (default 2), in
turn, and the fastest of each is compared, since the machine can slow either. It prints the
wall times, the ratio, the peak memory (resident, of each process with
its child processes, Milvus Lite's server among them), and where the optimize run's seconds went by its report (start-up,
chunking, indexing, searching, answering and scoring; the floor holds no search, answer or score). Goals: the ratio at most 1.5, the optimize run's peak at most 1.5 GB.

Usage: python bench/indexing.py [--docs DIR] [--golden FILE] [--optimize [--repeat N]]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from core.chunking import get_chunker  # noqa: E402
from core.documents import load_documents  # noqa: E402
from core.evaluation import EvaluateOptions, evaluate_retrieval  # noqa: E402
from core.models import LocalEmbeddingModel  # noqa: E402

NORTHWIND = ROOT / "examples" / "data" / "northwind-benefits"
SQUAD = ROOT / "examples" / "data" / "squad-mini"
#: Goals of the cold optimize run: its wall time over the floor's, and its peak memory.
GOAL_RATIO = 1.5
GOAL_PEAK_BYTES = 1.5 * 1024**3

FLOOR_SCRIPT = """
import json, sys, time
start = float(sys.argv[1])
from core.chunking import get_chunker
from core.documents import load_documents
from core.evaluation.indexing import build_index
from core.golden import read_golden
from core.models.local import local_embedding_model
from core.vectorstores import MilvusLiteConfig, collection_name_for, get_vector_store
import glob
from core.rag.extractive import split_sentences
chunkings, docs, golden, out, run = json.loads(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5], sys.argv[6]
documents = load_documents(docs).documents
questions = [q.question for q in read_golden(golden).questions]
# the sentences the run's extractive answerer embedded: every sentence of the passages it was
# given, read from the run's stored results (outside the timing would be fairer still; reading
# them costs the floor a few hundredths of a second)
sentences = {}
for path in glob.glob(run + "/experiments/*/results/*.json"):
    result = json.load(open(path, encoding="utf-8"))
    answers = result.get("answers") or {}
    if (answers.get("generator") or {}).get("kind") != "extractive":
        continue
    model_name = result["configuration"]["embedding_model"]
    for q in answers.get("questions", []):
        for c in q.get("contexts") or []:
            for s in split_sentences(c.get("text") or ""):
                sentences.setdefault(model_name, {})[s] = None
n_texts = n_built = 0
for name in sorted({c[3] for c in chunkings}):  # the models the optimize run embedded with
    model = local_embedding_model(name)
    mine = [c for c in chunkings if c[3] == name]
    per = [get_chunker(m, s or 256, o or 0, embedding_model=model).chunk(documents) for m, s, o, _ in mine]
    texts = list(dict.fromkeys([c.text for chunks in per for c in chunks] + questions + list(sentences.get(name, ()))))
    vectors = dict(zip(texts, model.embed_documents(texts)))
    n_texts += len(texts)

    class Known:
        model_id = model.model_id
        embedding_dimension = model.embedding_dimension
        def embed_documents(self, batch):
            import numpy as np
            return np.stack([vectors[t] for t in batch])
        def embed_query(self, text):
            return vectors[text]

    for chunks in per:
        store = get_vector_store(Known(), MilvusLiteConfig(out + "/milvus.db"), f"floor_{n_built}")
        build_index(store, chunks, Known(), reuse=False)
        store.close()
        n_built += 1
print(json.dumps({"wall_s": time.time() - start, "texts": n_texts, "collections": len(chunkings),
                  "sentences": sum(len(v) for v in sentences.values())}))
"""


def _tree_rss(root: int) -> int:
    """Resident bytes of process ``root`` and all its descendants now (0 once it has ended)."""
    import psutil

    try:
        parent = psutil.Process(root)
        processes = [parent, *parent.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for process in processes:
        try:
            total += process.memory_info().rss
        except psutil.Error:  # ended meanwhile
            continue
    return total


def child(args: list[str]) -> tuple[float, int, str]:
    """Run ``args`` in a fresh process; returns ``(wall seconds, peak resident bytes, stdout)``.
    The peak is the largest of the process's own ``ru_maxrss`` (from ``os.wait4``) and the sum
    of the resident sizes of the process and all its descendants (Milvus Lite's server among
    them), sampled every 0.2 s."""
    import os
    import threading

    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(args, cwd=ROOT, stdout=out, stderr=err)
        peak = [0]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.2):
                peak[0] = max(peak[0], _tree_rss(proc.pid))
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        done.set()
        sampler.join()
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode not in (0, 3):
            raise SystemExit(f"{args[:4]} failed ({proc.returncode}): {err.read().decode()[-2000:]}")
        return wall, max(usage.ru_maxrss * 1024, peak[0]), out.read().decode()


def optimize_vs_floor(repeat: int = 2) -> None:
    """The cold optimize run and its floor, each in a fresh process, ``repeat`` times in turn
    (optimize, floor, optimize, floor, ...); the ratio is that of the fastest of each (see the
    module docstring)."""
    opt_walls, floor_walls, opt_peak, floor_peak = [], [], 0, 0
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="ragtune-cold-") as tmp:
            wall, peak, out = child([sys.executable, "-m", "core.cli", "optimize", "--docs", str(SQUAD / "docs"),
                                     "--golden", str(SQUAD / "golden.jsonl"), "--max-evals", "8",
                                     "--out", f"{tmp}/opt", "--json"])
            run_report = json.loads(out)
            if not opt_walls or wall < min(opt_walls):
                report = run_report  # the phases printed are the fastest run's
            opt_walls.append(wall)
            opt_peak = max(opt_peak, peak)
            chunkings = sorted({(r["parameters"]["chunking_method"], r["parameters"].get("chunk_size"),
                                 r["parameters"].get("chunk_overlap"), r["parameters"]["embedding_model"])
                                for r in run_report["leaderboard"]}, key=lambda c: tuple(str(v) for v in c))
            wall, peak, out = child([sys.executable, "-c", FLOOR_SCRIPT, str(time.time()), json.dumps(chunkings),
                                     str(SQUAD / "docs"), str(SQUAD / "golden.jsonl"), f"{tmp}/floor", f"{tmp}/opt"])
            floor = json.loads(out.strip().splitlines()[-1])
            floor_walls.append(wall)
            floor_peak = max(floor_peak, peak)
    opt_wall, floor_wall = min(opt_walls), min(floor_walls)
    c = report["counts"]
    print()
    print(f"cold optimize: ragtune optimize --max-evals 8 on squad-mini ({report['golden']['n_questions']} questions), "
          f"a fresh process and output folder; {c['evaluations']} evaluations, {c['collections_built']} collections, "
          f"{c['texts_unique']} distinct texts ({c['texts_embedded']} embedded)")
    models = ", ".join(sorted({c[3] for c in chunkings}))
    print(f"floor: a fresh process loading the model the run embedded with ({models}), embedding {floor['texts']} "
          f"distinct texts (the chunk texts of its {floor['collections']} chunkings, the questions and the "
          f"{floor['sentences']} sentences its extractive answerer ranked) once and building each collection once")
    if c["texts_unique"] != floor["texts"]:
        print(f"the optimize run asked for {c['texts_unique']} distinct texts, the floor embedded {floor['texts']}")
    print(f"{'run':<16} {'fastest s':>9} {'peak MB':>9}   every run, s")
    print(f"{'floor':<16} {floor_wall:>9.1f} {floor_peak / 1024**2:>9.0f}   {', '.join(f'{w:.1f}' for w in floor_walls)}")
    print(f"{'cold optimize':<16} {opt_wall:>9.1f} {opt_peak / 1024**2:>9.0f}   {', '.join(f'{w:.1f}' for w in opt_walls)}")
    # where the optimize run's own seconds went (its report's timings), to set beside the floor,
    # which holds no search, no answer and no score
    phases = {name: sum(float((r.get("timings") or {}).get(name) or 0.0) for r in report["results"].values())
              for name in ("chunk_s", "index_s", "retrieve_s", "answers_s")}
    print(f"in the optimize run: {report['timings_s'].get('startup_s', 0.0):.1f} s start-up; in its evaluations "
          f"{phases['chunk_s']:.1f} s chunking, {phases['index_s']:.1f} s indexing (embedding chunks, building "
          f"collections), {phases['retrieve_s']:.1f} s searching ({c['evaluations']} x "
          f"{report['golden']['n_questions']} questions; the first evaluation's also embeds the questions), "
          f"{phases['answers_s']:.1f} s answering and scoring")
    ratio = opt_wall / floor_wall
    print(f"ratio optimize / floor, fastest of {repeat} each: {ratio:.2f} (goal <= {GOAL_RATIO}); optimize peak "
          f"{opt_peak / 1024**3:.2f} GB (goal <= {GOAL_PEAK_BYTES / 1024**3:.1f} GB); this run "
          f"{'meets' if ratio <= GOAL_RATIO and opt_peak <= GOAL_PEAK_BYTES else 'does not meet'} both")


def main() -> int:
    """Run the benchmark and print its table; returns 0."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", default=str(NORTHWIND / "docs"))
    parser.add_argument("--golden", default=str(NORTHWIND / "golden_pages.jsonl"))
    parser.add_argument("--optimize", action="store_true", help="also time a cold 'ragtune optimize' against its floor")
    parser.add_argument("--repeat", type=int, default=2,
                        help="with --optimize: runs of each, in turn; the fastest of each is compared (default 2)")
    args = parser.parse_args()
    if args.optimize:
        optimize_vs_floor(max(1, args.repeat))

    model = LocalEmbeddingModel()
    model.embed_documents(["warm up"])  # load the weights outside every timing

    options = EvaluateOptions(show_progress=False)
    chunks = get_chunker(options.chunking_method, options.chunk_size, options.chunk_overlap).chunk(
        load_documents(args.docs).documents
    )
    unique = list(dict.fromkeys(c.text for c in chunks))
    t0 = time.perf_counter()
    model.embed_documents(unique)
    floor_s = time.perf_counter() - t0

    with tempfile.TemporaryDirectory() as out:
        cold = evaluate_retrieval(args.docs, args.golden, out_dir=out, embedding_model=model, options=options)
        warm = evaluate_retrieval(args.docs, args.golden, out_dir=out, embedding_model=model, options=options)

    print(f"corpus {args.docs}: {cold['corpus']['n_documents']} documents, {len(chunks)} chunks, "
          f"{len(unique)} distinct chunk texts; {cold['golden']['n_questions']} questions, "
          f"{len(cold['setups'])} search setups")
    print(f"{'run':<34} {'seconds':>9} {'texts embedded':>15} {'ratio to floor':>15}")
    print(f"{'floor: embed distinct chunk texts':<34} {floor_s:>9.2f} {len(unique):>15} {1.0:>15.2f}")
    for name, rep in (("evaluate, cold cache", cold), ("evaluate, warm cache", warm)):
        total = rep["timings_s"]["total_s"]
        print(f"{name:<34} {total:>9.2f} {rep['indexing']['embedding']['n_embedded']:>15} {total / floor_s:>15.2f}")
    emb = cold["indexing"]["embedding"]
    print(f"cold run: {emb['embed_seconds']:.2f} s of {cold['timings_s']['total_s']:.2f} s in the model "
          f"({cold['timings_s']['search_s']:.2f} s searching); warm run embedded "
          f"{warm['indexing']['embedding']['n_embedded']} texts, collection reused: {warm['indexing']['reused']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
