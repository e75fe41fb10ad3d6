"""``ragtune evaluate``'s CI gate and remote report stores, end to end on squad-mini with the
real local model and Milvus Lite: thresholds, a baseline with the exact paired test (p-values
from scipy.stats.binomtest), ``--baseline latest`` passing over failed runs and other branches,
the verdict kept in the report and shown on its page, a golden file whose documents are all
missing, and ``--out s3://...`` on moto's server read back by ``report --html`` and ``report
--csv``."""

from __future__ import annotations

import copy
import csv
import json
import time

import pytest
from scipy.stats import binomtest

from core.cli import main
from core.evaluation.gate import EXIT_GATE
from core.reports import LocalFiles, ReportStore
from tests.support.services import delete_bucket, new_s3_bucket

pytestmark = [pytest.mark.integration, pytest.mark.slow]


@pytest.fixture(autouse=True)
def no_ci_branch(monkeypatch):
    """Runs record the branch they are given, not the one of the CI running these tests."""
    from core.settings import BRANCH_VARIABLES

    for name in BRANCH_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def golden(squad_dir, tmp_path_factory):
    """15 squad questions; the last 8 expect a document that does not answer them
    (``Packet_switching_p00.txt`` exists, so the run goes on and misses them)."""
    rows = [json.loads(line) for line in (squad_dir / "golden.jsonl").read_text(encoding="utf-8").splitlines()[:15]]
    for row in rows[7:]:
        row["expected"] = ["Packet_switching_p00.txt"]
        row.pop("evidence", None)
    path = tmp_path_factory.mktemp("g") / "golden.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _evaluate(docs, golden, out, *extra):
    return main(["evaluate", "--docs", str(docs), "--golden", str(golden), "--out", str(out), "--no-generate", *extra])


def test_thresholds_and_baseline(squad_dir, golden, tmp_path, capsys):
    docs = squad_dir / "docs"
    assert _evaluate(docs, golden, tmp_path, "--fail-under", "found@10=0.1") == 0
    assert "gate: passed:" in capsys.readouterr().err
    store = ReportStore(LocalFiles(tmp_path))
    first = store.load_run("latest")
    chosen = first["picks"]["finds_the_most"]
    grain = first["evaluation"]["rank_grain"]
    found10 = next(s for s in first["setups"] if s["name"] == chosen)["metrics"][grain]["means"]["found@10"]
    assert found10 < 0.9  # 8 of 15 questions expect a document that does not answer them

    code = _evaluate(docs, golden, tmp_path, "--fail-under", "found@10=0.9", "--fail-under", "mrr=0.0")
    err = capsys.readouterr().err
    assert code == EXIT_GATE
    assert f"gate: failed: {chosen} has found@10 {found10:.3f} at grain {grain}, under 0.9" in err

    # a baseline that found every question, stored as an earlier run on the same golden file
    baseline = copy.deepcopy(first)
    baseline["run_id"] = "20000101T000000Z-ba5e11"
    for q in baseline["questions"]:
        q["first_relevant_rank"] = {name: 1 for name in q["first_relevant_rank"]}
    store.save_run(baseline["run_id"], baseline)
    code = _evaluate(docs, golden, tmp_path, "--baseline", baseline["run_id"])
    err = capsys.readouterr().err
    now = store.load_run("latest")
    lost = sum(1 for q in now["questions"] if q["first_relevant_rank"][chosen] is None)
    p = binomtest(lost, lost, 0.5).pvalue
    assert lost >= 6 and p < 0.05  # so the gate must fail
    assert code == EXIT_GATE
    assert f"finds {lost} fewer of 15 questions than in {baseline['run_id']}" in err
    assert f"p = {p:.4f}" in err and "significantly worse" in err

    # latest: the newest run that passed its gate on this golden file (the first), which finds
    # the same questions; the two failed runs after it are passed over
    assert _evaluate(docs, golden, tmp_path, "--baseline", "latest") == 0
    err = capsys.readouterr().err
    assert "finds as many of 15 questions" in err
    assert f"baseline {first['run_id']}: the newest run that passed its gate" in err
    assert "passed over 2 newer runs on this golden file" in err  # the two failed runs (the named one is older)
    assert store.load_run("latest")["gate"]["baseline"]["run_id"] == first["run_id"]


def test_a_regression_pushed_twice_fails_twice_and_the_page_shows_why(squad_dir, golden, tmp_path, capsys):
    """A stored run that passed its gate on main and found every question; a run that finds
    fewer fails against it, and so does the same run pushed again (the failed run is passed
    over); a feature branch takes main's baseline only when told to."""
    from core.reports import new_run_id

    docs, fast = squad_dir / "docs", ("--skip", "*+rerank")
    assert _evaluate(docs, golden, tmp_path, *fast, "--branch", "main", "--baseline", "latest") == 0
    assert "no earlier run passed its gate on this golden file, corpus" in capsys.readouterr().err
    store = ReportStore(LocalFiles(tmp_path))
    first = store.load_run("latest")
    assert first["branch"] == "main" and first["gate"]["passed"] and first["gate"]["baseline"] is None
    gated = first["gate"]["setup"]
    assert gated == first["picks"]["finds_the_most"]

    # run ids sort by the second they were made: the good run is one second newer than the first,
    # and the pushes below start after that second, so "newest" never falls to a random tie
    from datetime import datetime, timedelta, timezone

    made = datetime.strptime(first["run_id"].split("-")[0], "%Y%m%dT%H%M%SZ").replace(tzinfo=timezone.utc)
    good = copy.deepcopy(first)
    good["run_id"] = new_run_id(made + timedelta(seconds=1))
    time.sleep(max(0.0, (made + timedelta(seconds=2) - datetime.now(timezone.utc)).total_seconds()))
    for q in good["questions"]:
        q["first_relevant_rank"] = {name: 1 for name in q["first_relevant_rank"]}
    store.save_run(good["run_id"], good)
    lost = sorted(str(q["id"]) for q in first["questions"] if q["first_relevant_rank"][gated] is None)
    p = binomtest(len(lost), len(lost), 0.5).pvalue
    assert len(lost) >= 6 and p < 0.05

    for push in (1, 2):
        assert _evaluate(docs, golden, tmp_path, *fast, "--branch", "main", "--baseline", "latest") == EXIT_GATE
        err = capsys.readouterr().err
        assert f"baseline {good['run_id']}: the newest run that passed its gate" in err
        assert f"finds {len(lost)} fewer of 15 questions than in {good['run_id']}" in err
        assert "gate: failed (exit 4); the verdict is in the report's 'gate'" in err
        if push == 2:
            assert "passed over 1 newer run on this golden file" in err and "failed its gate" in err
        now = store.load_run("latest")
        assert now["gate"]["exit_code"] == EXIT_GATE and now["gate"]["comparison"]["lost"] == lost
        assert now["gate"]["comparison"]["p_value"] == pytest.approx(p)

    # a feature branch has no passed run of its own; --baseline-branch main compares it with main's
    assert _evaluate(docs, golden, tmp_path, *fast, "--branch", "fix", "--baseline", "latest") == 0
    assert "no earlier run passed its gate on this golden file, corpus" in capsys.readouterr().err
    assert _evaluate(docs, golden, tmp_path, *fast, "--branch", "fix", "--baseline", "latest",
                     "--baseline-branch", "main") == EXIT_GATE
    capsys.readouterr()

    page = tmp_path / "run.html"
    assert main(["report", "latest", "--out", str(tmp_path), "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert 'id="gate"' in html and "exit code 4" in html and good["run_id"] in html
    assert f"{len(lost)} only in the baseline, 0 only now" in html


def test_golden_whose_documents_are_all_missing_is_exit_1(squad_dir, tmp_path, capsys):
    path = tmp_path / "golden.jsonl"
    path.write_text(json.dumps({"question": "Where?", "expected": ["no-such-file.pdf"]}) + "\n", encoding="utf-8")
    assert _evaluate(squad_dir / "docs", path, tmp_path / "out") == 1
    err = capsys.readouterr().err
    assert "the golden file expects 1 document and none is in" in err and "'no-such-file.pdf'" in err
    assert not (tmp_path / "out" / "retrieval").exists()


def test_golden_whose_documents_are_all_skipped_is_exit_1_with_the_reasons(tmp_path, capsys):
    """The expected document is in the folder (the check before loading passes) but does not
    load (a .pdf that is not a PDF): the run stops with each skip reason, and writes no report."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "broken.pdf").write_bytes(b"this is not a PDF\n" * 10)
    (docs / "other.txt").write_text("A text that loads but is not expected.\n", encoding="utf-8")
    path = tmp_path / "golden.jsonl"
    path.write_text(json.dumps({"question": "Where?", "expected": ["broken.pdf"]}) + "\n", encoding="utf-8")
    assert _evaluate(docs, path, tmp_path / "out", "--skip", "*+rerank") == 1
    err = capsys.readouterr().err
    assert "the golden file expects 1 document and none loaded from" in err
    assert "broken.pdf: " in err and "every score would be 0" in err and "Traceback" not in err
    assert not (tmp_path / "out" / "retrieval").exists()


def test_a_question_whose_documents_did_not_load_is_left_out_and_counted(tmp_path, capsys):
    """Two questions whose documents load and one whose only document is in the folder but does
    not load: the run scores the two (each finds its document: found@10 1.0 on 2 questions),
    counts the third as left out with the reason, and never says the file is missing."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "broken.pdf").write_bytes(b"this is not a PDF\n" * 10)
    (docs / "paris.txt").write_text("Paris is the capital of France, on the Seine.\n", encoding="utf-8")
    (docs / "tokyo.txt").write_text("Tokyo is the capital of Japan, on Tokyo Bay.\n", encoding="utf-8")
    rows = [{"id": "fr", "question": "What is the capital of France?", "expected": ["paris.txt"]},
            {"id": "jp", "question": "What is the capital of Japan?", "expected": ["tokyo.txt"]},
            {"id": "bad", "question": "Where?", "expected": ["broken.pdf"]}]
    path = tmp_path / "golden.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert _evaluate(docs, path, tmp_path / "out", "--skip", "*+rerank", "--json") == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    g = report["golden"]
    assert (g["n_questions"], g["n_left_out"]) == (2, 1)
    assert g["left_out"][0]["id"] == "bad" and g["left_out"][0]["line"] == 3
    assert g["left_out"][0]["reason"].startswith("broken.pdf: ")
    assert [q["id"] for q in report["questions"]] == ["fr", "jp"]
    for setup in report["setups"]:
        doc = setup["metrics"]["doc"]
        assert doc["n_scored"] == 2 and doc["means"]["found@10"] == 1.0, setup["name"]
    messages = [w["message"] for w in g["warnings"]]
    assert any(m.startswith("question 'bad' is left out of the scores: none of its expected documents loaded "
                            "(broken.pdf: ") for m in messages)
    assert not any("not in the corpus" in m for m in messages)


def test_unknown_baseline_is_exit_1_and_a_bad_threshold_is_usage_exit_2(squad_dir, golden, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_:
        _evaluate(squad_dir / "docs", golden, tmp_path, "--fail-under", "hits=1")
    assert exit_.value.code == 2  # bad usage, refused before any work
    err = capsys.readouterr().err
    assert "argument --fail-under: 'hits=1': use METRIC=VALUE" in err
    assert not (tmp_path / "retrieval").exists()
    assert _evaluate(squad_dir / "docs", golden, tmp_path, "--baseline", "20990101T000000Z-000000") == 1
    assert "no run '20990101T000000Z-000000'" in capsys.readouterr().err


@pytest.fixture
def bucket(monkeypatch):
    _, name, client = new_s3_bucket(monkeypatch)
    yield name, client
    delete_bucket(client, name)


def test_out_on_s3_then_report_reads_it(squad_dir, golden, tmp_path, bucket, monkeypatch, capsys):
    name, client = bucket
    monkeypatch.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "work"))  # caches and Milvus Lite stay local
    address = f"s3://{name}/reports"
    assert _evaluate(squad_dir / "docs", golden, address) == 0
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=name)["Contents"]]
    assert any(k.startswith("reports/retrieval/runs/") and k.endswith("/report.json") for k in keys)
    assert any(k.startswith("reports/golden_dataset/") for k in keys)
    assert (tmp_path / "work" / "milvus.db").exists()
    assert f"report: {address}/retrieval/runs/" in capsys.readouterr().out
    page, table = tmp_path / "page.html", tmp_path / "setups.csv"
    assert main(["report", "latest", "--out", address, "--html", str(page), "--csv", str(table)]) == 0
    assert "Evaluate run" in page.read_text(encoding="utf-8")
    rows = list(csv.DictReader(table.open(encoding="utf-8")))
    assert {r["setup"] for r in rows} >= {"dense", "keyword"} and len(rows) % 3 == 0  # setups x 3 grains
