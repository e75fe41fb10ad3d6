"""Studies of one corpus: ``ragtune compare-chunking``, ``sweep`` and ``cutoff``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from core.cli.common import (_check_expected_documents, _chunk_overlap, _chunk_size, _csv, _csv_ints, _print_json,
                             _print_plan)
from core.cli.models import _settings
from core.errors import ConfigError

if TYPE_CHECKING:
    from core.settings import Settings


def _search_setups(names: list[str]) -> list[Any]:
    """Search setups by name: ``vector``, ``keyword``, ``hybrid-rrf[-kN]``, ``hybrid-weighted[-aX]``."""
    from core.vectorstores import SearchSetup

    out: list[Any] = []
    for name in names:
        parts = name.split("-")
        try:
            if name in ("vector", "keyword"):
                out.append(SearchSetup(name))
            elif parts[:2] == ["hybrid", "rrf"] and len(parts) <= 3:
                out.append(SearchSetup("hybrid", "rrf", ranker_k=int(parts[2][1:]) if len(parts) == 3 else 60))
            elif parts[:2] == ["hybrid", "weighted"] and len(parts) <= 3:
                out.append(SearchSetup("hybrid", "weighted", ranker_alpha=float(parts[2][1:]) if len(parts) == 3 else 0.5))
            else:
                raise ValueError
        except (ValueError, IndexError):
            raise ConfigError(f"unknown search setup {name!r}; use vector, keyword, hybrid-rrf, hybrid-rrf-k60, "
                              "hybrid-weighted or hybrid-weighted-a0.5") from None
        if out[-1] in out[:-1]:  # the same setup named twice (keyword,keyword or hybrid-rrf,hybrid-rrf-k60)
            out.pop()
    return out


def _corpus_study(args: argparse.Namespace) -> tuple[Any, Path, dict[str, Any]]:
    """What ``compare-chunking``, ``sweep`` and ``cutoff`` start from: the settings, the out folder
    (``--out``, else ``RAGTUNE_OUT_DIR``) and the keywords ``out_dir``, ``embedding_model`` and
    ``vector_store_config`` (``--vector-store``) of their core function.

    Raises:
        ConfigError: none of the golden file's expected documents is in ``--docs`` (checked
            before any work, as ``evaluate`` does).
    """
    from core.golden import read_golden

    _check_expected_documents(read_golden(args.golden), args.docs)
    settings = _settings(args)
    out = Path(args.out or settings.out_dir)
    return settings, out, {"out_dir": out, "embedding_model": settings.embedding_model(),
                           "vector_store_config": settings.vector_store_config(out, args.vector_store)}


def _print_report(args: argparse.Namespace, report: dict[str, Any], location: Path,
                  text: Callable[[dict[str, Any]], str]) -> int:
    """Set ``report["location"]`` and print the report: as JSON with ``--json``, else ``text(report)``."""
    report["location"] = str(location)
    if args.json:
        _print_json(report)
    else:
        print(text(report))
    return 0


def cmd_compare_chunking(args: argparse.Namespace) -> int:
    """``ragtune compare-chunking``: every technique at every size, judged on the same character
    budget; writes ``chunking/runs/<id>/report.json``."""
    from core.evaluation.chunking import CompareOptions, compare_chunking, format_comparison, save_comparison

    settings, out, inputs = _corpus_study(args)
    chat = settings.chat_model()
    judge = settings.judge_model(args.judge)
    options = CompareOptions(
        methods=_csv(args.techniques, "--techniques") or None, sizes=_csv_ints(args.sizes, "--sizes") or (64, 128, 256),
        budget_chars=args.budget, current=args.current, search=_search_setups([args.search])[0],
        chat_model=chat if judge is not None else None, judge=judge, chunking_chat_model=chat,
        progress=None if args.json else (lambda m: print(m, file=sys.stderr)),
    )
    if args.dry_run:
        from core.chunking import MODEL_FREE_METHODS
        from core.evaluation.dry_run import plan_compare_chunking
        from core.golden import read_golden

        n_builds = len(options.methods or MODEL_FREE_METHODS) * len(options.sizes)
        plan = plan_compare_chunking(read_golden(args.golden), chat_model=options.chat_model, judge=judge,
                                     n_builds=n_builds, budget_chars=args.budget)
        return _print_plan(args, plan, settings)
    report, questions = compare_chunking(args.docs, args.golden, options=options, **inputs)
    return _print_report(args, report, out / save_comparison(out, report, questions), format_comparison)


def _yes_no(text: str | None) -> list[bool]:
    out = []
    for v in _csv(text, "--embed-headings"):
        if v.lower() not in ("yes", "no"):
            raise ConfigError(f"--embed-headings takes yes, no or yes,no; got {v!r}")
        out.append(v.lower() == "yes")
    return out


def cmd_sweep(args: argparse.Namespace) -> int:
    """``ragtune sweep``: every chunking combination built once, every search setup asked of each,
    rows ranked by nDCG@10, MRR, time; writes ``sweep/runs/<id>/report.json``."""
    from core.evaluation.sweep import DEFAULT_METHODS, DEFAULT_OVERLAPS, DEFAULT_SIZES, format_sweep, run_sweep, save_sweep

    settings, out, inputs = _corpus_study(args)
    report = run_sweep(
        args.docs, args.golden, methods=_csv(args.chunking, "--chunking") or DEFAULT_METHODS,
        sizes=_csv_ints(args.chunk_size, "--chunk-size") or DEFAULT_SIZES,
        overlaps=_csv_ints(args.chunk_overlap, "--chunk-overlap") or DEFAULT_OVERLAPS,
        embed_headings=_yes_no(args.embed_headings) or [False],
        setups=_search_setups(_csv(args.search, "--search")) if args.search is not None else None,
        chat_model=settings.chat_model(), progress=None if args.json else (lambda m: print(m, file=sys.stderr)),
        **inputs,
    )
    return _print_report(args, report, out / save_sweep(out, report),
                         lambda r: f"{format_sweep(r, markdown=args.markdown)}\n\nreport: {r['location']}")


def _cutoff_reranker(settings: Settings, measure: str) -> Any:
    """The configured reranker (``RAGTUNE_RERANK_*``), checked before any work, when ``measure``
    is ``relevance``; else None.

    Raises:
        ConfigError: the reranker cannot run (``Reranker.verify``), or none is configured.
    """
    if measure != "relevance":
        return None
    reranker = settings.reranker()
    if reranker is not None:
        reranker.verify()
    return reranker


def cmd_cutoff(args: argparse.Namespace) -> int:
    """``ragtune cutoff``: the top-result score that best separates answers from near misses;
    writes ``cutoff/runs/<id>/report.json``."""
    from core.evaluation.cutoff import answer_cutoff, format_cutoff
    from core.reports import LocalFiles, new_run_id

    settings, out, inputs = _corpus_study(args)
    report = answer_cutoff(
        args.docs, args.golden, args.unanswerable, chunking_method=args.chunking,
        chunk_size=_chunk_size(args), chunk_overlap=_chunk_overlap(args),
        setup=_search_setups([args.setup])[0], measure=args.measure,
        reranker=_cutoff_reranker(settings, args.measure), **inputs,
    )
    run_id = new_run_id()
    report["run_id"] = run_id
    key = f"cutoff/runs/{run_id}/report.json"
    LocalFiles(out).write_bytes(key, json.dumps(report, indent=2, ensure_ascii=False).encode("utf-8"))
    return _print_report(args, report, out / key, format_cutoff)

