"""Runs over targets on the page, in the summary and history, as text and for the gate: values
from :mod:`tests.support.target_reports` (worked out by hand there)."""

from __future__ import annotations

import pytest

from core.errors import ConfigError
from core.evaluation.gate import gated_setup, target_pick
from core.evaluation.targets import format_targets
from core.reports.pages import render_run
from core.reports.pages.site import render_history, target_changes
from core.reports.pages.targets import targets_view
from core.reports.summary import run_summary
from tests.support.target_reports import targets_report


def test_targets_side_by_side():
    view = targets_view(targets_report())
    assert [c["name"] for c in view["columns"]] == ["prod", "team", "down"]
    assert view["columns"][0]["missing"] == ["b.txt"] and view["columns"][2]["status"] == "failed"
    assert [r["setup"] for r in view["rows"]] == ["keyword"]
    prod, team, down = view["rows"][0]["cells"]
    # A: found@10 3/4, MRR (1 + 1/3 + 1/2) / 4; B: 2/4, (1/2 + 1) / 4 (tests/support/reports.py)
    assert (prod["value"], prod["mrr"]) == (0.75, pytest.approx(0.4583, abs=1e-4))
    assert (team["value"], team["mrr"]) == (0.5, 0.375)
    assert down is None and prod["picks"] == ["finds_the_most"]
    assert targets_view({"setups": []}) is None


def test_the_run_page_shows_targets_and_escapes_their_names():
    html = render_run(targets_report(prod_name="p<script>x</script>"))
    assert "Targets side by side" in html and "the index has no vector field: keyword setups only" in html
    assert "<script>x</script>" not in html and "p&lt;script&gt;x&lt;/script&gt;" in html
    assert "cannot open Qdrant" in html and 'id="targets-setups"' in html


def test_the_history_marks_where_a_targets_description_changed():
    runs = [run_summary(targets_report(f"2026010{i}T000000Z-00000{i}", (fp, "e" * 16)))
            for i, fp in ((1, "a" * 16), (2, "a" * 16), (3, "b" * 16))]
    assert runs[0]["targets"][0] == {"name": "prod", "status": "ok", "fingerprint": "a" * 16}
    seen: dict[str, str] = {}
    assert [target_changes(seen, r["targets"]) for r in runs] == [[], [], ["prod"]]
    html = render_history(runs, "ab" * 32)
    assert html.count("target prod changed") == 1 and "target team changed" not in html


def test_text_head_and_gate_setup():
    report = targets_report()
    lines = format_targets(report)
    assert lines[1] == ("target prod: azure-ai-search docs at https://x.search.windows.net: 6 chunks, 1 documents, "
                        f"fingerprint {'f' * 16}")
    assert "  not offered: dense*, hybrid*: the index has no vector field: keyword setups only" in lines
    assert "  lacks 1 of the 2 expected documents: b.txt" in lines
    assert lines[-1] == "target down (qdrant): failed: target down: cannot open Qdrant"
    assert gated_setup(report, "team/finds_the_most", None) == ("team/keyword",
                                                                "this run's pick finds_the_most of target team")
    assert gated_setup(report, "finds_the_most", None) == ("prod/keyword", "this run's pick finds_the_most")
    assert gated_setup(report, "prod/keyword", None) == ("prod/keyword", "named with --setup")
    with pytest.raises(ConfigError) as failed:
        gated_setup(report, "down/finds_the_most", None)
    assert str(failed.value) == "--setup down/finds_the_most: the gated target down failed: cannot open Qdrant"
    with pytest.raises(ConfigError) as unknown:
        target_pick(report, "nope/finds_the_most")
    assert str(unknown.value) == "--setup nope/finds_the_most: no target 'nope' in this run (prod, team, down)"
