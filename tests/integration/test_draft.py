"""Drafted questions (``ragtune draft``) against a scripted OpenAI-compatible chat server over
real HTTP (writer and critic), on squad-mini documents, with the real local embedding model.

The scripted writer answers each passage with a question a person wrote for that document in
squad-mini's golden file, and a quote checked by hand to be verbatim in it; each test then breaks
one thing (a quote not on the page, a copied passage, duplicates, a refusal, a server that stops
answering) and checks what the run makes of it.
"""

from __future__ import annotations

import json
import re

import pytest

from core.cli import main
from core.documents import load_documents
from core.golden import check_golden
from core.golden.draft import DraftOptions, DraftStopped, ReplyCache, draft_questions, draft_to_file
from core.metrics.retrieval import normalize_text
from core.models import LocalEmbeddingModel, OpenAIChatModel
from tests.support.openai_app import ChatReply, OpenAITestApp, last_user_text

pytestmark = [pytest.mark.integration, pytest.mark.slow]

N_DOCS = 8


@pytest.fixture(scope="module")
def corpus(squad_dir, tmp_path_factory):
    """8 squad-mini documents and, per document, a golden question with a verbatim quote."""
    folder = tmp_path_factory.mktemp("docs")
    golden = [json.loads(line) for line in (squad_dir / "golden.jsonl").read_text(encoding="utf-8").splitlines()]
    picked: dict[str, dict] = {}
    for row in golden:
        doc = row["expected"][0]
        text = (squad_dir / "docs" / doc).read_text(encoding="utf-8")
        quotes = [q for q in row.get("evidence", []) if len(q.split()) >= 3 and normalize_text(q) in normalize_text(text)]
        if doc not in picked and quotes:
            picked[doc] = {"question": row["question"], "reference": row["reference"], "evidence": quotes[:1],
                           "first_sentence": text.split(". ")[0]}
        if len(picked) == N_DOCS:
            break
    for doc in picked:
        (folder / doc).write_bytes((squad_dir / "docs" / doc).read_bytes())
    return load_documents(folder).documents, picked


@pytest.fixture(scope="module")
def embedder():
    return LocalEmbeddingModel()


def passage_doc(body: dict) -> str:
    return re.search(r"\[P1\] from ([^:\n]+):", last_user_text(body)).group(1)


def task(body: dict) -> str:
    text = last_user_text(body)
    if text.startswith("Turned down"):
        return "rewrite"
    return re.match(r"TASK: (\w+)", text).group(1) if text.startswith("TASK") else "?"


def responder(picked, *, writer=None, passage_score=None):
    """Critic: every passage 0.9 (or ``passage_score(doc)``), every grade 0.9; writer: the
    document's golden question (or ``writer(doc, body)``)."""
    def respond(body):
        kind = task(body)
        messages = body["messages"]
        doc = re.search(r"\[P1\] from ([^:\n]+):", messages[1]["content"]).group(1)
        if kind == "score":
            return json.dumps({"score": passage_score(doc) if passage_score else 0.9, "reason": "ok"})
        if kind == "grade":
            return json.dumps({"question": 0.9, "answer": 0.8, "reason": "fine"})
        if writer is not None:
            return writer(doc, body)
        item = picked[doc]
        return json.dumps({k: item[k] for k in ("question", "reference", "evidence")})
    return respond


def chat(app):
    return OpenAIChatModel("scripted", base_url=app.base_url, max_attempts=1, timeout_s=10)


def rows_of(path):
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def test_rows_carry_verbatim_quotes_their_pages_and_counts(corpus, embedder, tmp_path):
    documents, picked = corpus
    out = tmp_path / "drafts.jsonl"
    with OpenAITestApp(responder(picked, passage_score=lambda d: 0.2 if d == sorted(picked)[0] else 0.9)) as app:
        summary = draft_to_file(documents, out, writer=chat(app), embedding_model=embedder,
                                options=DraftOptions(n=5, kinds=("factual",)))
    rows = rows_of(out)
    assert summary.written["factual"] == len(rows) == 5
    assert summary.passed_over == {"weak passage": 1}
    texts = {d.document_id: normalize_text(d.document.export_to_text()) for d in documents}
    for i, row in enumerate(rows, start=1):
        doc = row["expected"][0]
        assert row["id"] == f"draft-{i:03d}" and row["draft"] is True and row["metadata"]["kind"] == "factual"
        assert row["question"] == picked[doc]["question"] and row["evidence"] == picked[doc]["evidence"]
        assert all(normalize_text(q) in texts[doc] for q in row["evidence"])
        assert row["metadata"]["grades"] == {"question": 0.9, "answer": 0.8}
        assert doc in row["hint"]
    assert sorted(picked)[0] not in [r["expected"][0] for r in rows]
    check = check_golden(out)
    assert check.n_drafts == 5 and [p.message for p in check.errors][0].startswith("nothing ready")


def test_quote_not_on_the_page_is_asked_again_then_set_aside(corpus, embedder, tmp_path):
    documents, picked = corpus
    bad_doc = sorted(picked)[3]  # 8 passages visited in strides of 3: the 1st, 4th, 7th, 2nd, ... document

    def writer(doc, body):
        item = dict(picked[doc])
        turned_down = task(body) == "rewrite"
        if doc == bad_doc or not turned_down:  # a quote not on the page; fixed when asked again, except bad_doc
            item["evidence"] = ["a sentence the passage never holds"]
        return json.dumps({k: item[k] for k in ("question", "reference", "evidence")})

    with OpenAITestApp(responder(picked, writer=writer)) as app:
        summary = draft_questions(documents, writer=chat(app), embedding_model=embedder,
                                  cache=ReplyCache(tmp_path / "c.jsonl"), options=DraftOptions(n=3, kinds=("factual",), tries=2))
        rewrites = [b for b in app.chat_requests if task(b) == "rewrite"]
    assert summary.n_written == 3
    assert "quote not on the page" in rewrites[0]["messages"][-1]["content"]
    assert [a["passage"] for a in summary.set_aside] == [bad_doc]
    assert summary.set_aside[0]["reason"].startswith("quote not on the page")
    assert summary.passed_over == {"quote not on the page": 1}


def test_copied_wording_and_duplicates_are_turned_down(corpus, embedder, tmp_path):
    documents, picked = corpus
    docs = sorted(picked)

    def writer(doc, body):
        item = dict(picked[doc])
        if doc == docs[2]:
            item["question"] = picked[doc]["first_sentence"] + "?"  # copies the passage
        elif doc != docs[0]:
            item["question"] = picked[docs[0]]["question"]  # the same question for every other passage
        return json.dumps({k: item[k] for k in ("question", "reference", "evidence")})

    with OpenAITestApp(responder(picked, writer=writer)) as app:
        summary = draft_questions(documents, writer=chat(app), embedding_model=embedder,
                                  cache=ReplyCache(tmp_path / "c.jsonl"),
                                  options=DraftOptions(n=N_DOCS, kinds=("factual",), tries=1))
    assert summary.n_written == 1
    assert summary.passed_over["copies the passage"] == 1
    assert summary.passed_over["too close to an earlier question"] == N_DOCS - 2
    reasons = [a["reason"] for a in summary.set_aside]
    assert any(r.startswith("too close to an earlier question: cosine 1.00") for r in reasons)


def test_refusal_ends_the_run_keeping_the_rows_written(corpus, embedder, tmp_path):
    documents, picked = corpus
    seen: list[str] = []

    def writer(doc, body):
        seen.append(doc)
        if len(seen) == 3:
            return "I'm sorry, but I can't help with writing questions about this."
        return json.dumps({k: picked[doc][k] for k in ("question", "reference", "evidence")})

    out = tmp_path / "d.jsonl"
    with OpenAITestApp(responder(picked, writer=writer)) as app:
        with pytest.raises(DraftStopped, match="refused") as stopped:
            draft_to_file(documents, out, writer=chat(app), embedding_model=embedder,
                          options=DraftOptions(n=6, kinds=("factual",)))
    assert stopped.value.summary.n_written == 2 and len(rows_of(out)) == 2


def test_server_down_mid_run_resumes_from_the_cache_and_a_rerun_costs_nothing(corpus, embedder, tmp_path, capsys,
                                                                              monkeypatch):
    documents, picked = corpus
    state = {"down_after": 7, "n": 0}
    normal = responder(picked)

    def respond(body):
        state["n"] += 1
        if state["down_after"] is not None and state["n"] > state["down_after"]:
            return ChatReply(status=503)
        return normal(body)

    out = tmp_path / "drafts.jsonl"
    options = DraftOptions(n=4, kinds=("factual",))
    with OpenAITestApp(respond) as app:
        with pytest.raises(DraftStopped, match="stopped answering") as stopped:
            draft_to_file(documents, out, writer=chat(app), embedding_model=embedder, options=options)
        assert stopped.value.summary.n_replies == 7  # the 8th request got no reply: not counted
        first = rows_of(out)
        assert len(first) == 2  # 3 requests per row (score, write, grade): 7 requests make 2 rows
        asked_before = len(app.chat_requests)
        state["down_after"] = None
        summary = draft_to_file(documents, out, writer=chat(app), embedding_model=embedder, options=options)
        assert summary.n_cached == 7 and len(app.chat_requests) - asked_before == summary.n_replies - 7
        rows = rows_of(out)
        assert rows[:2] == first and len(rows) == 4 and len({r["id"] for r in rows}) == 4
        asked = len(app.chat_requests)
        again = draft_to_file(documents, out, writer=chat(app), embedding_model=embedder, options=options)
        assert len(app.chat_requests) == asked and again.n_cached == again.n_replies  # nothing asked
        assert rows_of(out) == rows
    with pytest.raises(Exception, match="never overwritten"):
        draft_to_file(documents, out, writer=chat(app), embedding_model=embedder, options=DraftOptions(n=5))


def test_cli_draft_with_kinds_and_a_stopped_server(corpus, squad_dir, tmp_path, capsys, monkeypatch):
    documents, picked = corpus
    folder = documents and tmp_path / "docs"
    folder.mkdir()
    for doc in picked:
        (folder / doc).write_bytes((squad_dir / "docs" / doc).read_bytes())

    def writer(doc, body):
        item = dict(picked[doc])
        if "does NOT answer" in body["messages"][1]["content"]:
            return json.dumps({"question": f"Who funded the study of {doc.split('_p')[0].replace('_', ' ')} in 2030?",
                               "reference": "", "evidence": []})
        return json.dumps({k: item[k] for k in ("question", "reference", "evidence")})

    with OpenAITestApp(responder(picked, writer=writer)) as app:
        monkeypatch.setenv("RAGTUNE_CHAT_PROVIDER", "openai")
        monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", app.base_url)
        monkeypatch.setenv("RAGTUNE_CHAT_MODEL", "scripted")
        monkeypatch.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "work"))
        out = tmp_path / "k.jsonl"
        assert main(["draft", "--docs", str(folder), "--n", "2", "--kinds", "factual,unanswerable", "--examples",
                     str(squad_dir / "golden.jsonl"), "-o", str(out)]) == 0
        writes = [b["messages"][1]["content"] for b in app.chat_requests if task(b) == "write"]
    first_example = json.loads((squad_dir / "golden.jsonl").read_text(encoding="utf-8").splitlines()[0])["question"]
    assert all(f"Questions in the style wanted:\n- {first_example}" in w for w in writes)
    captured = capsys.readouterr()
    assert "wrote 2 draft questions (1 factual, 1 unanswerable)" in captured.out
    side = tmp_path / "k.unanswerable.jsonl"
    assert f"draft-001 (factual) -> {out}" in captured.err and f"draft-002 (unanswerable) -> {side}" in captured.err
    assert [r["metadata"]["kind"] for r in rows_of(out)] == ["factual"]
    (unanswerable,) = rows_of(side)
    # no 'expected': removing 'draft' can never make it an answerable row labelled with its page
    assert "expected" not in unanswerable and "evidence" not in unanswerable
    assert unanswerable["reference"] == "The documents do not answer this question."
    near = unanswerable["metadata"]["written_near"]
    assert len(near) == 1 and near[0] in picked and near[0] in unanswerable["hint"]
    assert unanswerable["hint"].endswith("check that no document answers it, then remove 'draft'")
    # cutoff reads the file: drafts are counted and not asked until a person removes 'draft'
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("".join(json.dumps({"id": f"g{i}", "question": picked[d]["question"], "expected": [d]}) + "\n"
                                for i, d in enumerate(sorted(picked))), encoding="utf-8")
    cutoff = ["cutoff", "--docs", str(folder), "--golden", str(labelled), "--unanswerable", str(side),
              "--out", str(tmp_path / "work"), "--json"]
    assert main(cutoff) == 1
    assert "holds no question ready: 1 unchecked draft; check that no document answers each, then remove its " \
           "'draft'" in capsys.readouterr().err
    side.write_text(json.dumps({k: v for k, v in unanswerable.items() if k != "draft"}) + "\n", encoding="utf-8")
    assert main(cutoff) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["unanswerable"] == {"path": str(side), "n_questions": 1, "n_drafts": 0}
    assert [r["kind"] for r in report["questions"]].count("unanswerable") == 1
    # the server is gone: the run stops at once with a clear message and exit 1
    assert main(["draft", "--docs", str(folder), "--n", "2", "-o", str(tmp_path / "gone.jsonl")]) == 1
    err = capsys.readouterr().err
    assert "stopped answering" in err and "run the same command again to resume" in err
    assert main(["draft", "--docs", str(folder), "--kinds", "factual,nonsense", "-o", str(tmp_path / "x.jsonl")]) == 1
    assert "kinds must be" in capsys.readouterr().err


def test_multi_hop_uses_two_pages_of_one_pdf(northwind_dir, embedder, tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "PerksPlus.pdf").write_bytes((northwind_dir / "docs" / "PerksPlus.pdf").read_bytes())
    documents = load_documents(tmp_path / "docs").documents
    pages = {}

    def respond(body):
        text = body["messages"][1]["content"]
        blocks = dict(re.findall(r"\[(P\d)\] from ([^:\n]+):\n", text))
        kind = task(body)
        if kind == "score":
            return json.dumps({"score": 0.9})
        if kind == "grade":
            return json.dumps({"question": 1, "answer": 1})
        quotes = []
        for label in ("P1", "P2"):
            start = text.index(f"[{label}] from {blocks[label]}:\n") + len(f"[{label}] from {blocks[label]}:\n")
            quotes.append(" ".join(text[start:].split()[:6]))
            pages[label] = blocks[label]
        return json.dumps({"question": "Which two perks does the program pair with fitness classes?",
                           "reference": "Both, as the two pages say.", "evidence": quotes})

    with OpenAITestApp(respond) as app:
        summary = draft_questions(documents, writer=chat(app), embedding_model=embedder,
                                  cache=ReplyCache(tmp_path / "c.jsonl"), options=DraftOptions(n=1, kinds=("multi-hop",)))
        written = []
        draft_questions(documents, writer=chat(app), embedding_model=embedder, cache=ReplyCache(tmp_path / "c.jsonl"),
                        options=DraftOptions(n=1, kinds=("multi-hop",)), on_row=written.append)
    assert summary.written == {"multi-hop": 1}
    row = written[0]
    assert row["expected"] == [pages["P1"], pages["P2"]]
    p1, p2 = (int(p.split("#page=")[1]) for p in row["expected"])
    assert p1 != p2 and abs(p1 - p2) == 1 and all(1 <= p <= 4 for p in (p1, p2))
    assert row["hint"].startswith("the answer is on page ")


def test_passages_are_spread_across_the_sections_of_a_document(embedder, tmp_path):
    """A Markdown handbook with four section passages (see tests/unit/golden/test_sections.py):
    four factual questions, one written from each section, each hint naming its section."""
    from tests.unit.golden.test_sections import HANDBOOK

    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "handbook.md").write_text(HANDBOOK, encoding="utf-8")
    documents = load_documents(tmp_path / "docs").documents
    questions = {"Handbook": "What comes first in the staff rules?",
                 "Leave": "Which codes cover time off work?",
                 "Sick leave": "How are absences through illness listed?",
                 "Pay": "When do salaries arrive, and how is a business trip handled?"}
    seen = []

    def respond(body):
        text = body["messages"][1]["content"]
        kind = task(body)
        if kind == "score":
            return json.dumps({"score": 0.9})
        if kind == "grade":
            return json.dumps({"question": 1, "answer": 1})
        passage = text.split("[P1] from handbook.md:\n", 1)[1].split("\n")
        seen.append(passage[0])
        return json.dumps({"question": questions[passage[0]], "reference": "As the section says.",
                           "evidence": [" ".join(passage[1].split()[:5])]})

    written = []
    with OpenAITestApp(respond) as app:
        summary = draft_questions(documents, writer=chat(app), embedding_model=embedder,
                                  cache=ReplyCache(tmp_path / "c.jsonl"),
                                  options=DraftOptions(n=4, kinds=("factual",)), on_row=written.append)
    assert summary.written == {"factual": 4} and seen == ["Handbook", "Leave", "Sick leave", "Pay"]
    assert [r["expected"] for r in written] == [["handbook.md"]] * 4
    assert [r["hint"].split(", under ")[1].split('"')[1] for r in written] == [
        "Handbook", "Handbook > Leave", "Handbook > Leave > Sick leave", "Handbook > Pay"]


def _cli_env(monkeypatch, app, tmp_path):
    monkeypatch.setenv("RAGTUNE_CHAT_PROVIDER", "openai")
    monkeypatch.setenv("RAGTUNE_CHAT_BASE_URL", app.base_url)
    monkeypatch.setenv("RAGTUNE_CHAT_MODEL", "scripted")
    monkeypatch.setenv("RAGTUNE_OUT_DIR", str(tmp_path / "work"))


def _squad_folder(squad_dir, picked, tmp_path):
    folder = tmp_path / "docs"
    folder.mkdir()
    for doc in picked:
        (folder / doc).write_bytes((squad_dir / "docs" / doc).read_bytes())
    return folder


def test_a_model_that_ignores_the_reply_format_stops_the_run_with_an_example(corpus, squad_dir, tmp_path, capsys,
                                                                              monkeypatch):
    _, picked = corpus
    folder = _squad_folder(squad_dir, picked, tmp_path)
    chatty = "Sure! This passage is a great fit, I would score it quite high. Let me know if you need more."
    with OpenAITestApp(lambda body: chatty) as app:
        _cli_env(monkeypatch, app, tmp_path)
        code = main(["draft", "--docs", str(folder), "--n", "20", "--max-unusable", "5", "-o", str(tmp_path / "d.jsonl")])
        asked = len(app.chat_requests)
    err = capsys.readouterr().err
    assert code == 1 and asked == 5  # five replies in a row out of format: no more calls
    assert "5 critic replies in a row were not in the reply format (the last, from openai:" in err
    assert "/scripted: 'Sure! This passage is a great fit" in err
    assert 'every reply must be one JSON object, for example {"score": 0.8, "reason": ' in err
    assert "wrote 0 draft questions of 20 asked" in err and "5 not in the reply format" in err
    assert "fewer rows than asked: 20 of the 20 rows asked for are missing: the run stopped (5 critic replies in a " \
           "row" in err
    assert not (tmp_path / "d.jsonl").exists()
    assert "; no row written yet; run the same command again" in err  # no file named that was never written


def test_a_writer_that_ignores_the_format_is_stopped_though_the_critic_follows_it(corpus, embedder, tmp_path):
    documents, picked = corpus
    prose = "Here is a good question: what did the passage say? The answer is in the text."
    with OpenAITestApp(responder(picked, writer=lambda doc, body: prose)) as app:
        with pytest.raises(DraftStopped, match="4 writer replies in a row were not in the reply format") as stopped:
            draft_questions(documents, writer=chat(app), embedding_model=embedder, cache=ReplyCache(tmp_path / "c.jsonl"),
                            options=DraftOptions(n=8, kinds=("factual",), tries=3, max_unusable=4))
        tasks = [task(b) for b in app.chat_requests]
    # passage 1: score, write, rewrite, rewrite (3 out of format); passage 2: score, write (the 4th): stop
    assert tasks == ["score", "write", "rewrite", "rewrite", "score", "write"]
    assert '{"question": "What share of routine check-ups' in str(stopped.value)
    assert stopped.value.summary.n_unusable == 4 and stopped.value.summary.n_written == 0


def test_fewer_rows_than_asked_says_why(corpus, embedder, tmp_path):
    documents, picked = corpus
    strong = sorted(picked)[5]
    with OpenAITestApp(responder(picked, passage_score=lambda d: 0.9 if d == strong else 0.2)) as app:
        summary = draft_questions(documents, writer=chat(app), embedding_model=embedder,
                                  cache=ReplyCache(tmp_path / "c.jsonl"), options=DraftOptions(n=3, kinds=("factual",)))
    # 8 one-passage documents, 3 rows asked: min(8, 3 * 3) = 8 passages taken, all visited; one is strong
    assert summary.n_written == 1 and summary.n_candidates == 8 and summary.n_visited == 8
    assert summary.why_short() == (
        "2 of the 3 rows asked for are missing: every one of the 8 passages the run takes (3 per row asked, spread "
        "across the sections) was visited, and 7 gave no row (7 weak passage); lower the critic's bar, add documents, "
        "or ask for fewer rows")
    assert "fewer rows than asked: 2 of the 3 rows asked for are missing" in summary.format()
    assert summary.to_dict()["why_short"] == summary.why_short()


def test_replies_out_of_format_are_asked_again_on_the_next_run(corpus, embedder, tmp_path):
    # the first run's critic answers in prose (stopped after 3); the next run, same model name
    # and the same reply cache, with a critic that follows the format: the prose is not replayed
    documents, picked = corpus
    cache_path = tmp_path / "c.jsonl"
    options = DraftOptions(n=2, kinds=("factual",), max_unusable=3)
    with OpenAITestApp(lambda body: "I think this passage is good.") as app:
        with pytest.raises(DraftStopped, match="3 critic replies in a row were not in the reply format"):
            draft_questions(documents, writer=chat(app), embedding_model=embedder, cache=ReplyCache(cache_path),
                            options=options)
    assert len(ReplyCache(cache_path)) == 0  # the three replies are dropped from the cache
    with OpenAITestApp(responder(picked)) as app:
        summary = draft_questions(documents, writer=chat(app), embedding_model=embedder, cache=ReplyCache(cache_path),
                                  options=options)
        asked = len(app.chat_requests)
    assert summary.n_written == 2 and summary.n_cached == 0 and asked == summary.n_replies


def test_a_short_run_whose_replies_ignore_the_format_says_so_with_an_example(corpus, embedder, tmp_path):
    # fewer passages than --max-unusable: the run is never stopped, and its end says the
    # model ignores the format (with the example) instead of advising a lower bar
    documents, picked = corpus
    with OpenAITestApp(lambda body: "I think this passage is good.") as app:
        summary = draft_questions(documents[:2], writer=chat(app), embedding_model=embedder,
                                  cache=ReplyCache(tmp_path / "c.jsonl"),
                                  options=DraftOptions(n=1, kinds=("factual",), max_unusable=8))
    assert summary.n_written == 0 and summary.stopped is None and summary.n_unusable == summary.n_replies == 2
    short = summary.why_short()
    assert "the last 2 critic replies were not in the reply format (the last, from openai:" in short
    assert 'every reply must be one JSON object, for example {"score": 0.8' in short
    assert "lower the critic's bar" not in short
    # one reply out of format: said in the singular
    with OpenAITestApp(lambda body: "I think this passage is good.") as app:
        one = draft_questions(documents[:1], writer=chat(app), embedding_model=embedder,
                              cache=ReplyCache(tmp_path / "one.jsonl"),
                              options=DraftOptions(n=1, kinds=("factual",), max_unusable=8))
    assert one.n_written == 0 and one.n_unusable == one.n_replies == 1
    assert "the last critic reply was not in the reply format (the last, from openai:" in one.why_short()


def test_sigint_keeps_the_rows_written_and_says_how_to_resume(corpus, squad_dir, tmp_path, capsys, monkeypatch):
    import signal
    import threading

    _, picked = corpus
    folder = _squad_folder(squad_dir, picked, tmp_path)
    normal = responder(picked)
    state = {"n": 0, "interrupt_at": 7}
    main_thread = threading.main_thread().ident

    def respond(body):
        state["n"] += 1
        if state["n"] == state["interrupt_at"]:  # a real SIGINT to the drafting thread, mid-request
            signal.pthread_kill(main_thread, signal.SIGINT)
        return normal(body)

    out = tmp_path / "drafts.jsonl"
    command = ["draft", "--docs", str(folder), "--n", "4", "--kinds", "factual", "-o", str(out)]
    # a process started in the background by a non-interactive shell ignores SIGINT; Ctrl-C in a
    # terminal raises KeyboardInterrupt, as Python's own handler does
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    with OpenAITestApp(respond) as app:
        _cli_env(monkeypatch, app, tmp_path)
        try:
            code = main(command)
        finally:
            signal.signal(signal.SIGINT, previous)
        assert code == 130
        err = capsys.readouterr().err
        # 3 requests per row (score, write, grade): 2 rows were written before the 7th request
        assert "ragtune draft: interrupted; 2 rows written so far, kept in" in err
        assert f"run the same command again to resume: the rows written are kept and the replies so far are cached " \
               f"in {out}.replies.jsonl" in err
        assert "fewer rows than asked: 2 of the 4 rows asked for are missing: the run stopped (interrupted)" in err
        first = rows_of(out)
        assert [r["id"] for r in first] == ["draft-001", "draft-002"]
        state["interrupt_at"] = None
        assert main(command) == 0
    err = capsys.readouterr().err
    rows = rows_of(out)
    assert rows[:2] == first and [r["id"] for r in rows] == ["draft-001", "draft-002", "draft-003", "draft-004"]
    assert "draft-001" not in err and f"draft-003 (factual) -> {out}" in err  # progress only for new rows


def _text_page(heading, paragraphs):
    """A PDF page: a 14 pt heading, then paragraphs of 10 pt lines of about 80 characters."""
    lines, y = [(72, 720, 14, heading)], 690
    for paragraph in paragraphs:
        words, line = paragraph.split(), ""
        for word in words:
            if len(line) + len(word) > 80:
                lines.append((72, y, 10, line.strip()))
                y, line = y - 14, ""
            line += " " + word
        lines.append((72, y, 10, line.strip()))
        y -= 28
    return lines


DENTAL_A = ("The dental plan pays eighty percent of routine check-ups and cleanings twice a year. Orthodontic braces "
            "for adults are not covered, and crowns are paid at half their cost once the yearly deductible is met.")
DENTAL_B = ("Dental care under the handbook covers two check-ups and two cleanings a year at eighty percent. Braces "
            "are covered for children under eighteen only, and fillings are paid in full after the deductible.")
TRAVEL_B = ("Business travel is booked through the travel portal at least two weeks ahead. Economy class is used for "
            "flights under six hours, and hotel costs are paid up to the city's nightly limit.")
TRAVEL_C = ("Employees who travel abroad must register the trip with the security desk before leaving. Meals on the "
            "road are repaid against receipts up to a daily allowance set for each country.")
COVER = ("Contoso Electronics prepared this benefits handbook for every employee in every office, and this edition "
         "replaces every earlier edition of the handbook that the company has issued before.")


def test_comparison_pairs_a_passage_on_merit_not_the_next_cover(embedder, tmp_path):
    """a-dental.pdf's passage is the one scored strong; the next document, b-handbook.pdf,
    opens with a cover (over 25 words) and a table of contents: the second passage is its
    dental page, the passage of another document closest to the first, not its cover."""
    from core.golden.passages import section_passages
    from tests.support.pdf import write_pdf

    docs = tmp_path / "docs"
    docs.mkdir()
    toc = [f"{name} {page}" for name, page in (
        ("Dental and vision cover", 3), ("Travel and expenses policy", 4), ("Pensions and retirement savings", 5),
        ("Sick leave and absence", 6), ("Parental leave and family care", 7), ("Training budget and courses", 8),
        ("Company cars and mileage", 9), ("Working from home", 10))]
    handbook = [[(72, 720, 20, "Employee Benefits Handbook"), *_text_page("2024 edition", [COVER])[1:]],
                [(72, 720, 14, "Contents"), *[(72, 690 - 20 * i, 10, t) for i, t in enumerate(toc)]],
                _text_page("Dental cover", [DENTAL_B]), _text_page("Travel and expenses", [TRAVEL_B])]
    (docs / "a-dental.pdf").write_bytes(write_pdf([_text_page("Dental cover", [DENTAL_A])]))
    (docs / "b-handbook.pdf").write_bytes(write_pdf(handbook))
    (docs / "c-travel.pdf").write_bytes(write_pdf([_text_page("Travel abroad", [TRAVEL_C])]))
    documents = load_documents(docs).documents
    b_passages = [p.unit for p in section_passages(next(d for d in documents if d.document_id == "b-handbook.pdf"))]
    assert [u.page for u in b_passages if not u.near_empty][:2] == [1, 2]  # the cover and contents come first

    pairs = []

    def respond(body):
        text = body["messages"][1]["content"]
        blocks = re.findall(r"\[(P\d)\] from ([^:\n]+):\n", text)
        kind = task(body)
        if kind == "score":
            return json.dumps({"score": 0.9 if blocks[0][1] == "a-dental.pdf#page=1" else 0.1})
        if kind == "grade":
            return json.dumps({"question": 1, "answer": 1})
        pairs.append([target for _, target in blocks])
        quotes = [" ".join(text.split(f"[{label}] from {target}:\n", 1)[1].split("\n")[1].split()[:6])
                  for label, target in blocks]
        return json.dumps({"question": "How do the two dental plans differ on braces?", "reference": "See both.",
                           "evidence": quotes})

    written = []
    with OpenAITestApp(respond) as app:
        summary = draft_questions(documents, writer=chat(app), embedding_model=embedder,
                                  cache=ReplyCache(tmp_path / "c.jsonl"),
                                  options=DraftOptions(n=3, kinds=("comparison",)), on_row=written.append)
    # 6 passages, 3 rows asked: every passage is visited (9 taken at most); only a-dental.pdf's is strong
    assert summary.n_visited == 6 and summary.written == {"comparison": 1}
    assert pairs == [["a-dental.pdf#page=1", "b-handbook.pdf#page=3"]]
    assert written[0]["expected"] == ["a-dental.pdf#page=1", "b-handbook.pdf#page=3"]
