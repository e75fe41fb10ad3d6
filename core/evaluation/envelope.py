"""One report envelope for every report kind: the schema version, the kind, when it ran, the
golden file and the corpus it read, its timings, the package versions and the models' sources.

Every report kind (``retrieval`` from ``evaluate``, ``chunking-comparison``, ``sweep``,
``answer-cutoff``, ``app`` from ``evaluate-app``, ``experiment`` from ``optimize`` and the
Functions) is :func:`envelope` around the kind's own body, in one order::

    schema_version, kind, <head...>, started_at, finished_at, golden, corpus, <body...>,
    timings_s, versions, models

A part a kind does not give is left out (``answer-cutoff`` has no times, ``sweep`` no
versions, ``experiment`` no times but a head of ``experiment_id`` and ``complete``), so every
report keeps the fields it always had, in the order it always had them. A kind with a layout
of its own says so with its own ``schema_version`` (``app``, ``experiment``). The run id and where the report is
kept are the report store's (``core.reports.store``).
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from core.inputs import shown_address
from core.models.describe import describe_models
from core.reports.store import REPORT_SCHEMA_VERSION

if TYPE_CHECKING:
    from core.documents.loader import LoadResult
    from core.golden.types import GoldenSet


def golden_block(golden_path: str | Path, golden: GoldenSet, **fields: Any) -> dict[str, Any]:
    """A report's ``golden``: ``{"path" (shown without credentials), "sha256", **fields}``.

    Args:
        golden_path: the golden file's path or address.
        golden: its ``GoldenSet``.
        fields: the counts the report kind gives (``n_questions``, ``n_labelled``, ...).
    """
    return {"path": shown_address(golden_path), "sha256": golden.sha256, **fields}


def labelled_counts(golden: GoldenSet) -> dict[str, int]:
    """What an ``evaluate`` report's ``golden`` counts: ``n_questions``, ``n_templates``,
    ``n_drafts``, ``n_with_pages`` (questions with page labels) and ``n_with_evidence``
    (questions with a usable evidence quote)."""
    questions = golden.questions
    return {"n_questions": len(questions), "n_templates": golden.n_templates, "n_drafts": golden.n_drafts,
            "n_with_pages": sum(1 for q in questions if q.pages),
            "n_with_evidence": sum(1 for q in questions if q.usable_evidence)}


def corpus_block(docs_dir: str | Path, loaded: LoadResult, fingerprint: str, **fields: Any) -> dict[str, Any]:
    """A report's ``corpus``: ``{"path", "n_documents", **fields, "fingerprint", "skipped"}``.

    Args:
        docs_dir: the documents' folder or address (shown without credentials).
        loaded: the loaded corpus (``core.documents.loader.LoadResult``: its documents and the
            files skipped, with the reason).
        fingerprint: ``core.documents.corpus_fingerprint`` of the documents.
        fields: the counts the report kind gives (``n_pages``, ``n_chunks``).
    """
    return {"path": shown_address(docs_dir), "n_documents": len(loaded.documents), **fields,
            "fingerprint": fingerprint,
            "skipped": [{"document_id": s.document_id, "reason": s.reason} for s in loaded.skipped]}


def envelope(kind: str, body: Mapping[str, Any], *, schema_version: str = REPORT_SCHEMA_VERSION,
             head: Mapping[str, Any] | None = None, started: datetime | None = None,
             golden: Mapping[str, Any] | None = None, corpus: Mapping[str, Any] | None = None,
             timings_s: Mapping[str, float] | None = None, versions: Mapping[str, str] | None = None,
             models: Sequence[Any] | None = None) -> dict[str, Any]:
    """The report of kind ``kind``: the envelope's parts around ``body``.

    Args:
        kind: the report kind (``retrieval``, ``chunking-comparison``, ``sweep``,
            ``answer-cutoff``, ``app``, ``experiment``).
        body: the kind's own fields, in their order.
        schema_version: the version of the kind's JSON layout (default: the report store's
            ``REPORT_SCHEMA_VERSION``; ``app`` and ``experiment`` have their own).
        head: fields that name the run, right after ``kind`` (``experiment``: ``experiment_id``,
            ``complete``).
        started: when the run started (UTC); with it, ``started_at`` and ``finished_at`` (now),
            to the second.
        golden: the ``golden`` part (:func:`golden_block`).
        corpus: the ``corpus`` part (:func:`corpus_block`).
        timings_s: seconds by step, rounded here to the millisecond.
        versions: package versions (``core.evaluation.retrieval.package_versions``).
        models: the models used (embedding models, rerankers, chat models; None entries
            skipped); ``models`` describes each by id
            (``core.models.describe.describe_models``: source, revision, weight files' sha256).
    """
    report: dict[str, Any] = {"schema_version": schema_version, "kind": kind}
    report.update(head or {})
    if started is not None:
        report["started_at"] = started.isoformat(timespec="seconds")
        report["finished_at"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    if golden is not None:
        report["golden"] = dict(golden)
    if corpus is not None:
        report["corpus"] = dict(corpus)
    report.update(body)
    if timings_s is not None:
        report["timings_s"] = {k: round(v, 3) for k, v in timings_s.items()}
    if versions is not None:
        report["versions"] = dict(versions)
    if models is not None:
        report["models"] = describe_models(list(models))
    return report
