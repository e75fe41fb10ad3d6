"""A small report of a run over targets, in the stored format, from
:func:`tests.support.reports.retrieval_report` (numbers by hand there): setup A becomes
``prod/keyword``, B becomes ``team/keyword``; a third target failed."""

from __future__ import annotations

import copy
from typing import Any

from tests.support.reports import RANKS, retrieval_report

NAMES = {"A": "prod/keyword", "B": "team/keyword"}


def targets_report(run_id: str = "20260102T000000Z-bbbbbb", fingerprints: tuple[str, str] = ("f" * 16, "e" * 16),
                   prod_name: str = "prod") -> dict[str, Any]:
    """The report; ``fingerprints`` are prod's and team's; ``prod_name`` renames prod (to test
    escaping)."""
    names = {"A": f"{prod_name}/keyword", "B": "team/keyword"}
    report = copy.deepcopy(retrieval_report(run_id, RANKS))
    for s, old in zip(report["setups"], ("A", "B")):
        s["name"] = names[old]
        s["target"] = names[old].split("/")[0]
    for q in report["questions"]:
        q["first_relevant_rank"] = {names[k]: v for k, v in q["first_relevant_rank"].items()}
    report["picks"].update(finds_the_most=names["A"], best_for_balance=names["B"], best_for_time=names["B"])
    report["corpus"] = report["indexing"] = None
    report["targets"] = [
        {"name": prod_name, "kind": "azure-search", "status": "ok", "error": None, "n_expected_documents": 2,
         "missing_documents": ["b.txt"], "setups": [names["A"]], "picks": {"finds_the_most": names["A"]},
         "description": {"engine": "azure-ai-search", "index": "docs", "location": "https://x.search.windows.net",
                         "n_chunks": 6, "n_documents": 1, "fingerprint": fingerprints[0], "fingerprint_basis": "b",
                         "inferred": ["text: 'content' (by its name)"], "notes": [],
                         "unavailable": [{"key": "dense*, hybrid*",
                                          "reason": "the index has no vector field: keyword setups only"}]}},
        {"name": "team", "kind": "pgvector", "status": "ok", "error": None, "n_expected_documents": 2,
         "missing_documents": [], "setups": [names["B"]], "picks": {"finds_the_most": names["B"]},
         "description": {"engine": "pgvector", "index": "public.chunks", "location": "db:5432/rag as reader",
                         "n_chunks": 6, "n_documents": 2, "fingerprint": fingerprints[1], "fingerprint_basis": "b",
                         "inferred": [], "notes": [], "unavailable": []}},
        {"name": "down", "kind": "qdrant", "status": "failed", "error": "target down: cannot open Qdrant",
         "description": None, "setups": [], "missing_documents": [], "n_expected_documents": 2, "picks": None},
    ]
    return report


__all__ = ["NAMES", "targets_report"]
