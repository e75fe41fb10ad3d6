"""``ragtune evaluate`` and ``ragtune check`` over several targets in one run: an Azure AI Search
index with and without vectors (the local service of ``tests.support.azure_search``), a team's
pgvector table, one that lacks a passage, a Qdrant collection (local mode), an unreachable
PostgreSQL whose DSN holds a password, and the collection ragtune builds from ``--docs``.

Expected values: the dense setups of every engine search the same vectors of the same chunks
exactly (cosine; pgvector's HNSW over eleven rows is exact), so their metrics must be equal
(reference: each other and the exact ranking checked in ``test_target_contract``); the lacking
passage and the failed target by hand from the fixtures.
"""

from __future__ import annotations

import json
import uuid

import pytest

from core.cli import main
from tests.support.services import service
from tests.support.target_corpus import shared_target_corpus

pytestmark = [pytest.mark.integration, pytest.mark.slow]

KEY = "test-search-key"
PASSWORD = "s3cret-pw"
PREFIX = "https://contoso.blob.core.windows.net/content/"
#: Golden lines used (the first of the corpus's golden file): few, so the reranker's runs stay short.
N_QUESTIONS = 6


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return shared_target_corpus(tmp_path_factory)


@pytest.fixture(scope="module")
def golden(corpus, tmp_path_factory):
    path = tmp_path_factory.mktemp("golden") / "golden.jsonl"
    path.write_text("\n".join(corpus.golden.read_text(encoding="utf-8").splitlines()[:N_QUESTIONS]) + "\n",
                    encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def azure(corpus):
    from core.models.local import local_reranker
    from tests.support.azure_search import AzureSearchTestServer, LocalIndex, index_definition, index_documents

    documents = index_documents(corpus.chunks, corpus.vectors, prefix=PREFIX)
    indexes = {"norman": LocalIndex(index_definition("norman", dimensions=384), documents,
                                    vectorize=corpus.model.model.embed_query),
               "novec": LocalIndex(index_definition("novec", dimensions=None, semantic=False),
                                   [{k: v for k, v in d.items() if k != "contentVector"} for d in documents])}
    with AzureSearchTestServer(indexes, api_key=KEY, reranker=local_reranker()) as server:
        yield server


@pytest.fixture(scope="module")
def tables(corpus):
    import psycopg

    dsn = service("RAGTUNE_TEST_PG_DSN", "postgres.sh")
    suffix = uuid.uuid4().hex[:8]
    team, partial = f"team_{suffix}", f"partial_{suffix}"
    with psycopg.connect(dsn, autocommit=True) as conn:
        for table in (team, partial):
            conn.execute(f"CREATE TABLE {table} (chunk_id bigserial PRIMARY KEY, body text, doc_path text, "
                         "embedding vector(384), body_tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) "
                         "STORED)")
        for chunk, vector in zip(corpus.chunks, corpus.vectors):
            literal = "[" + ",".join(repr(float(x)) for x in vector) + "]"
            for table in (team, partial):
                if table == partial and chunk.document_id == "Normans_p00.txt":
                    continue
                conn.execute(f"INSERT INTO {table} (body, doc_path, embedding) VALUES (%s, %s, %s::vector)",
                             (chunk.text, f"corpus/{chunk.document_id}", literal))
    yield dsn, team, partial
    with psycopg.connect(dsn, autocommit=True) as conn:
        conn.execute(f"DROP TABLE IF EXISTS {team}")
        conn.execute(f"DROP TABLE IF EXISTS {partial}")


@pytest.fixture(scope="module")
def qdrant(corpus, tmp_path_factory):
    from qdrant_client import QdrantClient, models

    folder = tmp_path_factory.mktemp("qdrant")
    client = QdrantClient(path=str(folder))
    client.create_collection("docs", vectors_config=models.VectorParams(size=384, distance=models.Distance.COSINE))
    client.upsert("docs", [models.PointStruct(id=i, vector=[float(x) for x in v],
                                              payload={"text": c.text, "source": c.document_id})
                           for i, (c, v) in enumerate(zip(corpus.chunks, corpus.vectors))])
    client.close()
    return str(folder)


@pytest.fixture()
def targets_file(tmp_path, azure, tables, qdrant, monkeypatch):
    dsn, team, partial = tables
    monkeypatch.setenv("RAGTUNE_SEARCH_ENDPOINT", azure.endpoint)
    monkeypatch.setenv("RAGTUNE_SEARCH_API_KEY", KEY)
    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "none")
    azure.requests.clear()
    path = tmp_path / "targets.yaml"
    path.write_text(f"""targets:
  - name: prod
    kind: azure-search
    index: norman
    auth: key
    fields: {{document_prefix: "{PREFIX}"}}
  - {{name: team, kind: pgvector, dsn: "{dsn}", table: {team}, fields: {{document: doc_path, document_prefix: corpus/}}}}
  - {{name: partial, kind: pgvector, dsn: "{dsn}", table: {partial}, fields: {{document_prefix: corpus/}}}}
  - {{name: local, kind: qdrant, path: "{qdrant}", collection: docs}}
  - {{name: down, kind: pgvector, dsn: "postgresql://reader:{PASSWORD}@127.0.0.1:1/rag", table: chunks}}
""", encoding="utf-8")
    return path


def _means(report, name):
    entry = next(s for s in report["setups"] if s["name"] == name)
    grain = report["evaluation"]["rank_grain"]
    return {m: entry["metrics"][grain]["means"][m] for m in ("found@5", "mrr", "found@10", "recall@5")}


def test_one_run_over_every_target(tmp_path, corpus, golden, targets_file, azure, capsys, caplog):
    out = tmp_path / "out"
    code = main(["evaluate", "--golden", str(golden), "--targets", str(targets_file), "--target", "azure-search:novec",
                 "--docs", str(corpus.docs), "--out", str(out), "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    report = json.loads(captured.out)
    targets = {t["name"]: t for t in report["targets"]}
    assert list(targets) == ["azure-search:novec", "prod", "team", "partial", "local", "down", "ragtune"]
    assert targets["down"]["status"] == "failed"
    assert "cannot connect to PostgreSQL at 127.0.0.1:1/rag as reader" in targets["down"]["error"]
    assert all(t["status"] == "ok" for n, t in targets.items() if n != "down")
    assert targets["partial"]["missing_documents"] == ["Normans_p00.txt"]
    assert all(targets[n]["missing_documents"] == [] for n in ("prod", "team", "local", "azure-search:novec", "ragtune"))
    assert {u["key"]: u["reason"] for u in targets["azure-search:novec"]["description"]["unavailable"]}[
        "dense*, hybrid*"] == "the index has no vector field: keyword setups only"
    assert targets["prod"]["description"]["engine"] == "azure-ai-search"
    assert len(targets["team"]["description"]["fingerprint"]) == 16
    names = [s["name"] for s in report["setups"]]
    assert all(n.split("/", 1)[0] in targets for n in names)
    assert {"prod/keyword", "prod/keyword-full+semantic", "prod/hybrid", "team/hybrid-rrf-k60", "local/dense",
            "azure-search:novec/keyword-full", "ragtune/hybrid-weighted-a0.5"} <= set(names)
    assert not any(n.startswith("down/") for n in names)
    # the same vectors searched exactly: every engine's dense setup scores the same
    dense = [_means(report, n) for n in ("prod/dense", "team/dense", "local/dense", "ragtune/dense")]
    assert all(d == dense[0] for d in dense), dense
    # the lacking passage costs the partial table the questions that expect it (all six expect Normans_p00 or p01)
    assert _means(report, "partial/dense")["found@10"] < dense[0]["found@10"]
    picks = report["picks"]
    assert picks["finds_the_most"] in names and set(picks["tied_with_best"]) <= set(names)
    assert targets["team"]["picks"]["finds_the_most"].startswith("team/")
    # credentials appear nowhere: report, stored report, printed lines, log records
    stored = (out / report["location"].split(str(out) + "/", 1)[1]).read_text(encoding="utf-8")
    for text in (captured.out, captured.err, stored, caplog.text):
        assert PASSWORD not in text and KEY not in text
    # the service was only read
    assert {r.method for r in azure.requests} <= {"GET", "POST"}
    assert all(r.path.endswith(("')", "/search.stats", "/docs/search.post.search")) for r in azure.requests)
    # the stored report prints as text
    assert main(["report", report["run_id"], "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "target partial: pgvector" in text and "lacks 1 of the 2 expected documents: Normans_p00.txt" in text
    assert "target down (pgvector): failed: target down: cannot connect to PostgreSQL" in text


def test_no_password_or_token_of_an_address_is_shown_when_targets_cannot_be_reached(tmp_path, monkeypatch, capsys,
                                                                                    caplog):
    # every kind of address with a credential in it, each refused (nothing listens on port 1)
    secret = "Pw-9f3kQ"
    monkeypatch.setenv("RAGTUNE_SEARCH_API_KEY", KEY)
    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "none")
    golden = tmp_path / "g.jsonl"
    golden.write_text(json.dumps({"id": "a", "question": "Who ruled Normandy?", "expected": ["a.txt"]}) + "\n",
                      encoding="utf-8")
    out = tmp_path / "out"
    code = main(["evaluate", "--golden", str(golden), "--out", str(out), "--json",
                 "--target", f"milvus:http://reader:{secret}@127.0.0.1:1#docs_a",
                 "--target", f"milvus:http://127.0.0.1:1/?token={secret}#docs_b",
                 "--target", f"qdrant:http://reader:{secret}@127.0.0.1:1#docs",
                 "--target", f"pgvector:postgresql://reader:{secret}@127.0.0.1:1/rag#chunks",
                 "--target", f"azure-search:http://reader:{secret}@127.0.0.1:1#norman"])
    captured = capsys.readouterr()
    assert code == 3, captured.err
    errors = {t["name"]: t["error"] for t in json.loads(captured.out)["targets"]}
    assert errors["milvus:docs_a"].startswith("target milvus:docs_a: cannot reach Milvus at http://127.0.0.1:1: ")
    assert errors["milvus:docs_b"].startswith("target milvus:docs_b: cannot reach Milvus at http://127.0.0.1:1/: ")
    assert "reading collection docs at http://127.0.0.1:1 failed" in errors["qdrant:docs"]
    assert "cannot connect to PostgreSQL at 127.0.0.1:1/rag as reader" in errors["pgvector:chunks"]
    assert "index norman at http://127.0.0.1:1 failed" in errors["azure-search:norman"]
    stored = [p.read_text(encoding="utf-8", errors="replace") for p in out.rglob("*") if p.is_file()]
    for text in (captured.out, captured.err, caplog.text, *stored):
        assert secret not in text


def test_pages_of_a_sourcepage_are_scored_and_unknown_pages_are_said_so(tmp_path, corpus, monkeypatch, capsys):
    from tests.integration.test_azure_search_target import paged_documents
    from tests.support.azure_search import AzureSearchTestServer, LocalIndex, index_definition
    from tests.support.search_ranking import parse_simple

    paged = paged_documents(corpus)  # chunk n of a passage is its page n, in sourcepage as <passage>#page=<n>
    indexes = {"paged": LocalIndex(index_definition("paged", dimensions=None, semantic=False), paged),
               "unpaged": LocalIndex(index_definition("unpaged", dimensions=None, semantic=False),
                                     [{**d, "sourcepage": d["sourcefile"]} for d in paged])}
    questions = corpus.questions[:N_QUESTIONS]
    golden = tmp_path / "g.jsonl"
    golden.write_text("".join(json.dumps({"id": i, "question": q, "expected": [f"{doc}#page=1"]}) + "\n"
                              for i, q, doc in questions), encoding="utf-8")
    monkeypatch.setenv("RAGTUNE_SEARCH_API_KEY", KEY)
    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "none")
    with AzureSearchTestServer(indexes, api_key=KEY) as server:
        code = main(["evaluate", "--golden", str(golden), "--out", str(tmp_path / "out"), "--json",
                     "--target", f"azure-search:{server.endpoint}#paged",
                     "--target", f"azure-search:{server.endpoint}#unpaged", "--only", "*/keyword"])
        report = json.loads(capsys.readouterr().out)
    assert code == 0
    targets = {t["name"]: t for t in report["targets"]}
    assert targets["azure-search:paged"]["description"]["pages_unknown"] is None
    assert targets["azure-search:unpaged"]["description"]["pages_unknown"] == \
        "no chunk read holds a page in field 'sourcepage'"
    setups = {e["name"]: e for e in report["setups"]}
    unknown = setups["azure-search:unpaged/keyword"]["metrics"]["page"]
    assert (unknown["means"], unknown["n_scored"], unknown["reason"]) == (
        {}, 0, "pages unknown: no chunk read holds a page in field 'sourcepage'")
    # page 1 of the expected passage in the service's BM25 top 10 (reference: the test service's ranking)
    bm25 = server.indexes["paged"].bm25()
    found = []
    for _, q, doc in questions:
        scores = bm25.scores(parse_simple(q))
        top = sorted(scores, key=lambda i: (-scores[i], i))[:10]
        found.append(any(paged[i]["sourcepage"] == f"{doc}#page=1" for i in top))
    page = setups["azure-search:paged/keyword"]["metrics"]["page"]
    assert page["n_scored"] == len(questions) and page["means"]["found@10"] == pytest.approx(sum(found) / len(found))
    assert sum(found) > 0
    # one target without pages: the setups are ranked by documents, and the report says why
    assert (report["evaluation"]["rank_grain"], report["evaluation"]["rank_grain_reason"]) == (
        "doc", "documents, not pages: the pages of target azure-search:unpaged are unknown")


def test_a_bad_mapping_stops_before_any_search(tmp_path, golden, targets_file, azure, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("- {name: prod, kind: azure-search, index: norman, fields: {text: body}}\n", encoding="utf-8")
    code = main(["evaluate", "--golden", str(golden), "--targets", str(bad), "--out", str(tmp_path / "out")])
    assert code == 1
    assert "fields.text names 'body', which the index lacks" in capsys.readouterr().err
    assert azure.searches() == []


def test_a_bad_mapping_names_the_targets_file_the_entry_and_the_field(tmp_path, golden, targets_file, azure, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("targets:\n"
                   "  - {name: team, kind: azure-search, index: norman, auth: key}\n"
                   "  - name: prod\n"
                   "    kind: azure-search\n"
                   "    index: norman\n"
                   "    auth: key\n"
                   "    fields: {document: nope}\n", encoding="utf-8")
    code = main(["evaluate", "--golden", str(golden), "--targets", str(bad), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 1
    # the file and the line where the entry starts, the target, the role and the field
    assert f"{bad}:3 (target prod): target prod (index norman): fields.document names 'nope', which the index " \
           "lacks (its fields: category, content, contentVector, id, sourcefile, sourcepage, title)" in err
    assert azure.searches() == []


def test_the_gate_on_a_chosen_targets_setup(tmp_path, golden, targets_file, capsys):
    out = str(tmp_path / "out")
    base = ["evaluate", "--golden", str(golden), "--targets", str(targets_file), "--only", "team/*", "--out", out]
    assert main(base + ["--setup", "team/keyword", "--fail-under", "found@10=0.5"]) == 0
    assert "gate: passed: team/keyword meets found@10 >= 0.5" in capsys.readouterr().err
    assert main(base + ["--setup", "team/finds_the_most", "--fail-under", "mrr=1.0"]) == 4
    err = capsys.readouterr().err
    assert "gate: failed: team/" in err and "under 1" in err
    assert main(base + ["--setup", "nope/finds_the_most", "--fail-under", "mrr=0.1"]) == 1
    assert ("--setup 'nope/finds_the_most' is neither a pick (finds_the_most, best_for_balance, best_for_time) nor "
            "TARGET/PICK or TARGET/SETUP of a target of this run") in capsys.readouterr().err


def test_a_gated_target_that_failed_is_the_gates_reason_and_the_report_is_kept(tmp_path, corpus, golden, qdrant,
                                                                             monkeypatch, capsys):
    from core.reports import LocalFiles, ReportStore

    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "none")
    out, gone = tmp_path / "out", tmp_path / "gone"
    targets = tmp_path / "targets_gone.yaml"
    targets.write_text(f"targets:\n  - {{name: team, kind: qdrant, path: \"{gone}\", collection: docs}}\n",
                       encoding="utf-8")
    code = main(["evaluate", "--golden", str(golden), "--targets", str(targets), "--docs", str(corpus.docs),
                 "--out", str(out), "--setup", "team/finds_the_most", "--fail-under", "found@1=0.9",
                 "--baseline", "latest"])
    err = capsys.readouterr().err
    reason = f"the gated target team failed: {gone} is not a Qdrant folder"
    assert code == 1
    assert f"gate: failed: the gate cannot judge this run: {reason}\n" in err and "has no finds_the_most" not in err
    report = ReportStore(LocalFiles(out)).load_run("latest")  # the run, searched and scored, is kept
    assert [(t["name"], t["status"]) for t in report["targets"]] == [("team", "failed"), ("ragtune", "ok")]
    assert len(report["questions"]) == N_QUESTIONS and all(s["target"] == "ragtune" for s in report["setups"])
    gate = report["gate"]
    assert (gate["passed"], gate["exit_code"], gate["error"], gate["setup"], gate["setup_key"]) == (
        False, 1, reason, None, "team/finds_the_most")


def test_a_target_that_cannot_be_reached_is_blamed_not_the_baselines_grain(tmp_path, golden, qdrant, monkeypatch,
                                                                          capsys):
    from core.reports import LocalFiles, ReportStore

    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "none")
    out, bad = tmp_path / "out", tmp_path / "qdata_bad"
    assert main(["evaluate", "--golden", str(golden), "--target", f"qdrant:{qdrant}#docs", "--out", str(out),
                 "--fail-under", "found@10=0"]) == 0
    capsys.readouterr()
    store = ReportStore(LocalFiles(out))
    good = store.load_run("latest")
    code = main(["evaluate", "--golden", str(golden), "--target", f"qdrant:{bad}#docs", "--out", str(out),
                 "--baseline", "latest"])
    err = capsys.readouterr().err
    assert code == 3  # no target could be evaluated
    reason = f"the gated target qdrant:docs failed: {bad} is not a Qdrant folder"
    assert f"gate: failed: the gate cannot judge this run: {reason}\n" in err
    assert "grain" not in err and "--rank-by" not in err
    report = store.load_run("latest")
    # the two runs rank at different grains (nothing was found to rank by evidence): not the reason given
    assert (good["evaluation"]["rank_grain"], report["evaluation"]["rank_grain"]) == ("evidence", "doc")
    assert (report["gate"]["error"], report["gate"]["exit_code"]) == (reason, 1)
    assert report["gate"]["baseline"]["run_id"] == good["run_id"]


def test_ragtunes_reranker_over_a_targets_first_stages(tmp_path, corpus, golden, targets_file, monkeypatch, capsys):
    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "local")
    code = main(["evaluate", "--golden", str(golden), "--targets", str(targets_file), "--only", "prod/keyword*",
                 "--skip", "*semantic*", "--out", str(tmp_path / "out"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    setups = {s["name"]: s for s in report["setups"]}
    assert set(setups) == {"prod/keyword", "prod/keyword+rerank", "prod/keyword-full", "prod/keyword-full+rerank"}
    reranked = setups["prod/keyword+rerank"]
    assert reranked["setup"]["reranker"] == report["reranker"]["model_id"]
    assert reranked["setup"]["retrieval_depth"] == 20 and reranked["timings_ms"]["rerank"] is not None
    # the kept hits carry the cross-encoder's own scores, best first (reference: the model, called here)
    from core.models.local import local_reranker

    first = report["questions"][0]
    top = first["top"]["prod/keyword+rerank"]
    assert [h["score"] for h in top] == sorted((h["score"] for h in top), reverse=True)
    text = corpus.chunks[int(top[0]["chunk_id"].removeprefix("doc"))].text
    assert top[0]["score"] == pytest.approx(local_reranker().rerank(first["question"], [text])[0], abs=1e-5)


def test_check_against_targets(tmp_path, corpus, targets_file, capsys):
    golden = tmp_path / "g.jsonl"
    golden.write_text(
        json.dumps({"id": "a", "question": "Who were the Normans?", "expected": ["Normans_p00.txt"],
                    "evidence": ["this sentence is in none of the passages at all"]}) + "\n"
        + json.dumps({"id": "b", "question": "Who was Rollo?", "expected": ["Normans_p01.txt"]}) + "\n",
        encoding="utf-8")
    code = main(["check", str(golden), "--targets", str(targets_file)])
    out = capsys.readouterr().out
    assert code == 1  # the unreachable target could not be checked
    assert "target partial lacks expected document Normans_p00.txt (1 question(s) expect it)" in out
    assert 'target team: stale evidence: quote "this sentence is in none of the passages at all" is not on ' \
           "Normans_p00.txt" in out
    assert "target down could not be checked" in out and PASSWORD not in out


def test_the_pages_show_targets_side_by_side_and_the_history_marks_a_change(tmp_path, golden, targets_file, tables,
                                                                            capsys):
    import psycopg
    from playwright.sync_api import sync_playwright

    from core.reports import LocalFiles, ReportStore
    from core.reports.pages import history_page, run_page
    from tests.support.browser import check_page, launch

    out = tmp_path / "out"
    args = ["evaluate", "--golden", str(golden), "--targets", str(targets_file), "--only", "team/*",
            "--only", "partial/*", "--only", "local/*", "--out", str(out), "--json"]
    assert main(args) == 0
    with psycopg.connect(tables[0], autocommit=True) as conn:  # the team changes its partial table
        conn.execute(f"DELETE FROM {tables[2]} WHERE doc_path = 'corpus/Normans_p01.txt'")
    assert main(args) == 0
    capsys.readouterr()
    store = ReportStore(LocalFiles(out))
    newest, oldest = store.run_ids()
    assert store.load_run(newest)["targets"][2]["description"]["fingerprint"] != \
        store.load_run(oldest)["targets"][2]["description"]["fingerprint"]
    with sync_playwright() as p:
        context = launch(p, tmp_path / "profile")
        run = tmp_path / "run.html"
        run.write_text(run_page(store, newest), encoding="utf-8")
        result = check_page(context, run.as_uri(), tmp_path / "run.png")
        assert result["errors"] == []
        table = result["page"].inner_text("#targets")
        assert "partial" in table and "Normans_p00.txt" in table and "down" in table and "failed" in table
        assert PASSWORD not in result["page"].content()
        assert result["page"].locator("#targets-setups tbody tr").count() == 3  # keyword, dense, hybrid-rrf-k60
        history = tmp_path / "history.html"
        history.write_text(history_page(store, store.load_run(newest)["golden"]["sha256"]), encoding="utf-8")
        result = check_page(context, history.as_uri(), tmp_path / "history.png")
        assert result["errors"] == []
        assert "target partial changed" in result["page"].inner_text("#history-runs")
        assert "target team changed" not in result["page"].inner_text("#history-runs")
        context.close()


def test_a_reranker_that_could_only_tie_is_not_run_and_a_tie_of_every_setup_is_no_winner(tmp_path, corpus, tables,
                                                                                           monkeypatch, capsys):
    # questions that are a chunk's own text, one per document: every first stage of the team's
    # table puts that document first, so its reranked setups are left out as over documents
    # (SETTLED_RULE) and the three setups left are tied: no winner
    from core.evaluation.retrieval import SETTLED_RULE

    dsn, team, _ = tables
    monkeypatch.setenv("RAGTUNE_RERANK_PROVIDER", "local")
    firsts = {}
    for c in corpus.chunks:
        firsts.setdefault(c.document_id, c)
    picked = list(firsts.values())[:4]
    golden = tmp_path / "golden.jsonl"
    golden.write_text("".join(json.dumps({"id": f"q{i}", "question": c.text, "expected": [c.document_id]}) + "\n"
                              for i, c in enumerate(picked)), encoding="utf-8")
    targets = tmp_path / "targets.yaml"
    targets.write_text(f"targets:\n  - {{name: team, kind: pgvector, dsn: \"{dsn}\", table: {team}, "
                       "fields: {document: doc_path, document_prefix: corpus/}}\n", encoding="utf-8")
    code = main(["evaluate", "--golden", str(golden), "--targets", str(targets), "--out", str(tmp_path / "out"),
                 "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0
    ranks = {s: [q["first_relevant_rank"][s] for q in report["questions"]] for s in
             ("team/keyword", "team/dense", "team/hybrid-rrf-k60")}
    assert ranks == {s: [1, 1, 1, 1] for s in ranks}
    assert [s["name"] for s in report["setups"]] == ["team/keyword", "team/dense", "team/hybrid-rrf-k60"]
    skipped = {s["key"]: s for s in report["skipped_setups"]}
    assert set(skipped) == {"team/keyword+rerank", "team/dense+rerank", "team/hybrid-rrf-k60+rerank"}
    assert skipped["team/dense+rerank"]["rule"] == SETTLED_RULE
    assert skipped["team/dense+rerank"]["reason"].startswith(
        "team/dense already finds a right result at rank 1 for all 4 questions scored at the doc grain")
    assert report["undecided"]["n_tied"] == 3 and report["undecided"]["grain"] == "doc"
    assert report["undecided"]["message"].startswith("these questions cannot tell the setups apart")
    code = main(["evaluate", "--golden", str(golden), "--targets", str(targets), "--out", str(tmp_path / "out")])
    printed = capsys.readouterr().out
    assert code == 0 and "no winner: these questions cannot tell the setups apart" in printed
    assert "skipped team/dense+rerank: team/dense already finds a right result at rank 1" in printed
