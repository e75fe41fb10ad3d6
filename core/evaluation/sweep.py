"""The sweep: every combination of chunking settings built once, every search setup asked of each.

Each combination of chunking method, chunk size, overlap and heading setting (see
:func:`core.evaluation.chunking.builds_for`; an overlap not smaller than the size is left out
and listed) is chunked, embedded (through the embedding cache) and indexed once in a scratch
collection, which is dropped after its searches. A combination whose chunks are identical to an
earlier one's (headings on a corpus without headings) is not built again: it shares the earlier
one's results. Every search setup then asks every question for the top :data:`TOP_K` results,
scored at the finest grain the golden file labels (as ``evaluate`` ranks by). Rows are ranked
by nDCG@10, then MRR, then median search time.
"""

from __future__ import annotations

import hashlib
import logging
import statistics
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

from core.documents import corpus_fingerprint, load_documents
from core.errors import ConfigError
from core.evaluation.chunking import MAX_LISTED, builds_for, check_methods, chunk_corpus
from core.evaluation.envelope import corpus_block, envelope, golden_block
from core.evaluation.indexing import cached_model, collection_for, scratch_index, store_config
from core.evaluation.retrieval import choose_rank_grain, default_search_setups
from core.golden import read_golden
from core.metrics.retrieval import DEFAULT_KS, TOP_K, evaluate_rankings  # the one home of the rank cut-offs
from core.models import LocalEmbeddingModel
from core.models.embeddings import query_text
from core.reports import LocalFiles, new_run_id
from core.reports.keys import SWEEP_RUNS_PREFIX  # where sweeps are stored
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.chunking.base import Chunker
    from core.evaluation.chunking import Build
    from core.models.chat import ChatModel
    from core.models.embeddings import EmbeddingModel
    from core.vectorstores.milvus import MilvusConfig, MilvusLiteConfig
    from core.vectorstores.pgvector import PGVectorConfig

logger = logging.getLogger(__name__)

#: Defaults of the sweep's axes.
DEFAULT_METHODS: tuple[str, ...] = ("recursive",)
DEFAULT_SIZES: tuple[int, ...] = (128, 256)
DEFAULT_OVERLAPS: tuple[int, ...] = (0, 32)


def run_sweep(
    docs_dir: str | Path,
    golden_path: str | Path,
    *,
    out_dir: str | Path,
    methods: Sequence[str] = DEFAULT_METHODS,
    sizes: Sequence[int] = DEFAULT_SIZES,
    overlaps: Sequence[int] = DEFAULT_OVERLAPS,
    embed_headings: Sequence[bool] = (False,),
    setups: Sequence[Any] | None = None,
    embedding_model: EmbeddingModel | None = None,
    vector_store_config: MilvusLiteConfig | MilvusConfig | PGVectorConfig | None = None,
    chat_model: ChatModel | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the sweep (module docstring) and return its report (not stored).

    Args:
        docs_dir: the documents folder (or address).
        golden_path: the golden file (or address).
        out_dir: working folder (``core.workspace.Workspace``: embedding cache, Milvus Lite
            database).
        methods: chunking methods.
        sizes: chunk sizes in tokens.
        overlaps: overlaps in tokens (for the methods that take one).
        embed_headings: heading settings.
        setups: ``SearchSetup`` objects (default: vector, hybrid RRF k=60, hybrid weighted 0.5).
        embedding_model: an ``EmbeddingModel``; default the local all-MiniLM-L6-v2.
        vector_store_config: the store the scratch collections are built in.
        chat_model: the chat model of the ``llm`` and ``contextual`` methods.
        progress: called with a short line per step.

    Returns:
        ``{"rows": [...] best first, "builds", "left_out", "failures", "settings", ...}``; each
        row: build key and settings, search setup, ``ndcg@10``, ``mrr``, ``recall@5``,
        ``recall@10``, ``found@10``, ``n_scored``, ``n_chunks``, ``build_s``, ``median_ms``.

    Raises:
        ConfigError: an unknown method (the known ones listed), bad sizes, no combination left.
        GoldenError: the golden file has errors.
    """
    methods = check_methods(methods, chat_model=chat_model)
    builds, left_out = builds_for(methods, list(sizes), embed_headings, overlaps=list(overlaps))
    if not builds:
        raise ConfigError("no combination is left: every overlap is not smaller than its size "
                          f"({'; '.join(lo['reason'] for lo in left_out)})")
    setups = list(setups) if setups else default_search_setups()
    for s in setups:
        s.to_dict()
    started = datetime.now(timezone.utc)
    t_start = time.perf_counter()
    workspace = Workspace.at(out_dir)
    golden = read_golden(golden_path)
    questions = list(golden.questions)
    grain = choose_rank_grain(questions)
    workspace.create()  # marked before the documents load, so they never hold it
    loaded = load_documents(docs_dir, cache_dir=workspace.inputs)
    fingerprint = corpus_fingerprint(loaded.documents)
    model = cached_model(embedding_model or LocalEmbeddingModel(), workspace)
    # once, outside the timed searches: the texts the searches embed (query instruction included)
    model.embed_documents([query_text(model, q.question) for q in questions])
    sweep = _Sweep(model, store_config(vector_store_config, workspace), fingerprint, questions, grain, setups,
                   chat_model, progress or (lambda m: logger.info(m)))
    for b in builds:
        sweep.run_build(b, loaded.documents)
    rows = sweep.rows

    def key(r: dict[str, Any]) -> tuple[float, float, float]:
        return (-(r["ndcg@10"] or 0.0), -(r["mrr"] or 0.0), r["median_ms"])

    rows.sort(key=key)
    for i, r in enumerate(rows, start=1):
        r["rank"] = i
    body = {
        "settings": {"methods": list(methods), "sizes": list(sizes), "overlaps": list(overlaps),
                     "embed_headings": [bool(h) for h in embed_headings], "search": [s.name for s in setups],
                     "grain": grain, "top_k": TOP_K, "embedding_model": model.model_id,
                     "ranking": "nDCG@10, then MRR, then median search time"},
        "rows": rows,
        "builds": sweep.build_rows,
        "left_out": left_out,
        "failures": sweep.failures[:MAX_LISTED],
        "n_failures": len(sweep.failures),
    }
    return envelope("sweep", body, started=started,
                    golden=golden_block(golden_path, golden, n_questions=len(questions)),
                    corpus=corpus_block(docs_dir, loaded, fingerprint),
                    timings_s={"total_s": time.perf_counter() - t_start},
                    models=[model])  # beside settings.embedding_model: source, revision, sha256


@dataclass
class _Sweep:
    """Each combination of a sweep built once in a scratch collection, asked by every setup,
    and dropped; collects the rows, the builds and what failed (internal)."""

    model: Any
    store_config: Any
    fingerprint: str
    questions: list[Any]
    grain: str
    setups: list[Any]
    chat_model: Any
    say: Callable[[str], Any]
    rows: list[dict[str, Any]] = field(default_factory=list)
    build_rows: list[dict[str, Any]] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)
    by_digest: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def run_build(self, b: Build, documents: Sequence[Any]) -> None:
        """Chunk, index and search one combination (one with the same chunks as an earlier one
        shares its rows)."""
        self.say(f"building {b.key}")
        t0 = time.perf_counter()
        chunker = b.chunker(embedding_model=self.model, chat_model=self.chat_model)
        chunks, failed = chunk_corpus(chunker, documents, b.key)
        self.failures.extend(failed)
        chunk_s = time.perf_counter() - t0
        info: dict[str, Any] = {**b.to_dict(), "n_chunks": len(chunks), "chunk_s": round(chunk_s, 3)}
        if not chunks:
            self.build_rows.append({**info, "status": "failed", "reason": "no document could be cut"})
            return
        digest = hashlib.sha256("\0".join(f"{c.document_id}\0{c.text}" for c in chunks).encode("utf-8")).hexdigest()
        if digest in self.by_digest:
            twin_rows = self.by_digest[digest]
            self.build_rows.append({**info, "status": "ok", "same_as": twin_rows[0]["build"],
                                    "build_s": round(chunk_s, 3)})
            for r in twin_rows:
                self.rows.append({**r, **{k: v for k, v in b.to_dict().items() if k != "key"}, "build": b.key,
                                  "same_as": r["build"], "build_s": round(chunk_s, 3)})
            return
        mine = self._searched(b, chunker, chunks, chunk_s, info)
        self.by_digest[digest] = mine
        self.rows.extend(mine)

    def _searched(self, b: Build, chunker: Chunker, chunks: list[Any], chunk_s: float,
                  info: dict[str, Any]) -> list[dict[str, Any]]:
        """Index ``chunks`` in a scratch collection (:func:`core.evaluation.indexing.scratch_index`)
        and score every setup on it; the collection is dropped after."""
        questions, grain = self.questions, self.grain
        name = collection_for(self.fingerprint, chunker.params(), self.model.model_id, prefix="ragtune_scratch",
                              purpose="sweep")
        mine: list[dict[str, Any]] = []
        with scratch_index(self.model, self.store_config, name, chunks, build_key=b.key,
                           failures=self.failures) as (store, built):
            build_s = chunk_s + built.embed_s + built.index_s
            self.build_rows.append({**info, "status": "ok", "embed_s": round(built.embed_s, 3),
                                    "build_s": round(build_s, 3)})
            for setup in self.setups:
                self.say(f"searching {b.key} with {setup.name}")
                if questions:
                    store.search(questions[0].question, k=TOP_K, **setup.to_dict())  # untimed warm-up
                rankings: dict[str, list[Any]] = {}
                latencies: list[float] = []
                for q in questions:
                    s = time.perf_counter()
                    hits = store.search(q.question, k=TOP_K, **setup.to_dict())
                    latencies.append((time.perf_counter() - s) * 1000.0)
                    rankings[q.id] = [h.chunk for h in hits]
                agg = evaluate_rankings(questions, rankings, grains=[grain], ks=DEFAULT_KS)[grain].aggregate.to_dict()
                means = agg["means"]
                mine.append({
                    "build": b.key, **{k: v for k, v in b.to_dict().items() if k != "key"}, "search": setup.name,
                    "setup": setup.to_dict(), "ndcg@10": means.get("ndcg@10"), "mrr": means.get("mrr"),
                    "recall@5": means.get("recall@5"), "recall@10": means.get("recall@10"),
                    "found@10": means.get("found@10"), "n_scored": agg["n_scored"],
                    "n_chunks": len(chunks), "build_s": round(build_s, 3),
                    "median_ms": round(statistics.median(latencies), 3) if latencies else 0.0,
                })
        return mine


def _cell(v: Any) -> str:
    return "-" if v is None else (f"{v:.3f}" if isinstance(v, float) else str(v))


def format_sweep(report: dict[str, Any], *, markdown: bool = False, most: int = 50) -> str:
    """The sweep's rows as a text table or, with ``markdown``, a Markdown table (for a pull
    request); at most ``most`` rows, then the left-out combinations and failures."""
    cols = ["rank", "chunking", "size", "overlap", "headings", "search", "ndcg@10", "mrr", "recall@5", "recall@10",
            "chunks", "build s", "median ms"]
    table = []
    for r in report["rows"][:most]:
        table.append([str(r["rank"]), r["method"], _cell(r["chunk_size"]), _cell(r["chunk_overlap"]),
                      "yes" if r["embed_headings"] else "no", r["search"], _cell(r["ndcg@10"]), _cell(r["mrr"]),
                      _cell(r["recall@5"]), _cell(r["recall@10"]), str(r["n_chunks"]), f"{r['build_s']:.1f}",
                      f"{r['median_ms']:.2f}"])
    st = report["settings"]
    head = (f"{report['corpus']['n_documents']} documents, {report['golden']['n_questions']} questions; "
            f"{len(report['builds'])} builds x {len(st['search'])} search setups; {st['grain']} grain; "
            f"ranked by {st['ranking']}")
    lines = [head, ""]
    if markdown:
        lines.append("| " + " | ".join(cols) + " |")
        lines.append("|" + "|".join("---:" if c not in ("chunking", "headings", "search") else "---" for c in cols) + "|")
        lines += ["| " + " | ".join(row) + " |" for row in table]
    else:
        widths = [max(len(c), *(len(row[i]) for row in table)) if table else len(c) for i, c in enumerate(cols)]
        lines.append("  ".join(c.rjust(w) for c, w in zip(cols, widths)))
        lines.append("-" * (sum(widths) + 2 * (len(cols) - 1)))
        lines += ["  ".join(v.rjust(w) for v, w in zip(row, widths)) for row in table]
    if len(report["rows"]) > most:
        lines.append(f"... {len(report['rows']) - most} more rows in the report")
    for lo in report["left_out"]:
        lines.append(f"left out {lo['method']} size {lo['chunk_size']} overlap {lo['chunk_overlap']}: {lo['reason']}")
    for f in report["failures"][:20]:
        lines.append(f"could not cut {f['document_id']} with {f['build']}: {f['reason']}")
    return "\n".join(lines)


def save_sweep(out_dir: str | Path, report: dict[str, Any], run_id: str | None = None) -> str:
    """Store a sweep as ``sweep/runs/<id>/report.json`` in the report folder; returns its key."""
    import json

    run_id = run_id or new_run_id()
    report["run_id"] = run_id
    key = f"{SWEEP_RUNS_PREFIX}/{run_id}/report.json"
    LocalFiles(Path(out_dir)).write_bytes(key, json.dumps(report, indent=2, ensure_ascii=False).encode("utf-8"))
    return key
