"""``evaluate-app``: a scripted deployed app over real HTTP (starlette + uvicorn,
``tests/support/app_server.py``) asked by the real client (``core.models.endpoint``'s
transport, tenacity's retries, the SQLite reply cache). Expected values are computed by hand in
each test from what the scripted app answers."""

from __future__ import annotations

import hashlib
import json
import platform
import threading
import time

import pytest

from core.evaluation.app import APP_REPORT_SCHEMA_VERSION, evaluate_app, latency_stats
from core.evaluation.app_config import AppConfig, load_app_config, map_reply, render_request
from core.errors import ConfigError
from core.golden import read_golden
from core.models.cache import EmbeddingCache
from core.settings import AppSettings
from tests.support.app_server import AppResponse, DeployedApp, demo_reply

#: The config of an azure-search-openai-demo app whose answers cite "[doc#page=N]".
DEMO = dict(citations_in_answer=r"\[([^\]]+)\]", contexts="context.data_points.text",
            context_pattern=r"^(?P<document>[^#:]+)(?:#page=(?P<page>\d+))?: (?P<text>.*)$")
FAST = dict(max_attempts=3, concurrency=1, timeout_s=5.0)


def golden_file(tmp_path, rows, name="golden.jsonl"):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return read_golden(path)


def last_question(body):
    return body["messages"][-1]["content"]


ROWS = [
    {"id": "q1", "question": "What is the deductible?", "expected": ["plan.pdf#page=2"], "reference": "500 dollars"},
    {"id": "q2", "question": "Who pays the premium?", "expected": ["plan.pdf#page=5"], "reference": "the employer"},
    {"id": "q3", "question": "Is dental covered?", "expected": ["dental.pdf"], "reference": "yes"},
    {"id": "q4", "question": "What is the copay?", "expected": ["plan.pdf#page=9"], "reference": "20 dollars"},
]
#: What the app cites for each question, in order.
CITED = {
    "What is the deductible?": ["plan.pdf#page=2", "plan.pdf#page=3"],    # right page first
    "Who pays the premium?": ["plan.pdf#page=4", "plan.pdf#page=5"],      # right page second
    "Is dental covered?": ["other.pdf#page=1", "x.pdf", "dental.pdf#page=7"],  # right document third
    "What is the copay?": ["other.pdf#page=9"],                           # wrong document
}


def citing_app(body, request):
    q = last_question(body)
    answer = "It is so. " + " ".join(f"[{c}]" for c in CITED[q])
    return demo_reply(answer, [f"{c}: passage about {q}" for c in CITED[q]])


def test_citations_are_scored_as_a_ranking_at_document_and_page_grain(tmp_path):
    golden = golden_file(tmp_path, ROWS)
    with DeployedApp(citing_app) as app:
        report = evaluate_app(golden, AppConfig(url=app.url, **DEMO), AppSettings(**FAST), metrics=[])
    setup = {s["name"]: s for s in report["setups"]}["citations"]
    # page grain: q1 page 2 at rank 1, q2 page 5 at rank 2, q4 nothing; q3 has no page label
    page = setup["metrics"]["page"]
    assert page["n_scored"] == 3 and page["n_unscorable"] == 1
    assert page["means"]["found@1"] == pytest.approx(1 / 3)
    assert page["means"]["found@3"] == pytest.approx(2 / 3)
    assert page["means"]["mrr"] == pytest.approx((1 + 1 / 2 + 0) / 3)
    # doc grain: q1 rank 1, q2 rank 1 (plan.pdf), q3 rank 3 (dental.pdf), q4 none
    doc = setup["metrics"]["doc"]
    assert doc["n_scored"] == 4
    assert doc["means"]["found@1"] == pytest.approx(2 / 4)
    assert doc["means"]["found@3"] == pytest.approx(3 / 4)
    assert doc["means"]["mrr"] == pytest.approx((1 + 1 + 1 / 3 + 0) / 4)
    # precision@3 at doc grain: q1 2/3 (both plan.pdf), q2 2/3, q3 1/3, q4 0
    assert doc["means"]["precision@3"] == pytest.approx((2 / 3 + 2 / 3 + 1 / 3 + 0) / 4)
    assert doc["ci_low"]["found@3"] <= doc["means"]["found@3"] <= doc["ci_high"]["found@3"]
    assert report["evaluation"]["rank_grain"] == "page"
    ranks = {q["id"]: q["first_relevant_rank"]["citations"] for q in report["questions"]}
    assert ranks == {"q1": 1, "q2": 2, "q3": None, "q4": None}  # q3 at the page grain: not scorable
    # the contexts are read with the pattern: document, page and text
    ctx = {s["name"]: s for s in report["setups"]}["contexts"]
    assert ctx["metrics"]["doc"]["means"]["found@1"] == pytest.approx(2 / 4)
    assert report["requests"] == {**report["requests"], "n_answered": 4, "n_failed": 0, "n_sent": 4}


def test_the_requests_carry_the_template_overrides_and_the_key(tmp_path):
    golden = golden_file(tmp_path, ROWS[:1])
    config = AppConfig(url="x", request={"question": "${question}", "id": "q=${question_id}", "ctx": {
        "overrides": "${overrides}", "turn": "${turn}"}, "messages": "${messages}"}, overrides={"top": 3})
    settings = AppSettings(api_key="k-123", key_header="X-Api-Key", **FAST)
    with DeployedApp(lambda body, request: demo_reply("fine")) as app:
        report = evaluate_app(golden, config.with_overrides(url=app.url, overrides={"temperature": 0}), settings,
                              metrics=[])
        sent = app.requests[0]
    assert sent["body"] == {"question": "What is the deductible?", "id": "q=q1",
                            "ctx": {"overrides": {"top": 3, "temperature": 0}, "turn": 1},
                            "messages": [{"role": "user", "content": "What is the deductible?"}]}
    assert sent["headers"]["x-api-key"] == "k-123"
    assert sent["headers"]["content-type"] == "application/json"
    assert "authorization" not in sent["headers"]
    assert "k-123" not in json.dumps(report)  # the key is never in the report
    assert report["app"]["settings"]["auth"] == "key"


#: The app report's fields, in their order (as written before the report moved onto the
#: envelope of ``core.evaluation.envelope``).
APP_ORDER = ["schema_version", "kind", "started_at", "finished_at", "golden", "app", "evaluation", "setups", "picks",
             "answers", "refusals", "latency_ms", "requests", "conversations", "turns", "questions", "timings_s",
             "versions"]


def test_the_report_is_on_the_envelope_in_its_order(tmp_path):
    golden = golden_file(tmp_path, ROWS[:2])
    with DeployedApp(citing_app) as app:
        report = evaluate_app(golden, AppConfig(url=app.url + "?code=secret", **DEMO), AppSettings(**FAST),
                              metrics=[])
    assert list(report) == APP_ORDER
    assert (report["schema_version"], report["kind"]) == (APP_REPORT_SCHEMA_VERSION, "app")
    assert report["started_at"] <= report["finished_at"]  # ISO 8601 in UTC, to the second: ordered as text
    path = tmp_path / "golden.jsonl"
    assert report["golden"] == {"path": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                                "n_questions": 2, "format": "ragtune", "warnings": []}
    assert report["app"]["url"] == app.url  # the query (a function key) is never shown
    assert list(report["timings_s"]) == ["ask_s", "score_s", "total_s"]
    assert report["timings_s"]["total_s"] >= report["timings_s"]["ask_s"]
    assert all(v == round(v, 3) for v in report["timings_s"].values())
    assert report["versions"]["python"] == platform.python_version()


def test_429_is_retried_after_what_retry_after_asks(tmp_path):
    golden = golden_file(tmp_path, ROWS[:1])
    calls = []

    def app_429_once(body, request):
        calls.append(time.monotonic())
        if len(calls) == 1:
            return AppResponse({"error": "slow down"}, status=429, headers={"Retry-After": "1"})
        return demo_reply("500 dollars [plan.pdf#page=2]")

    with DeployedApp(app_429_once) as app:
        report = evaluate_app(golden, AppConfig(url=app.url, **DEMO), AppSettings(**FAST), metrics=[],
                              retry_wait_s=0.01)
    assert len(calls) == 2
    assert calls[1] - calls[0] >= 0.95  # waited what Retry-After asked, not the 0.01 s backoff
    q = report["questions"][0]
    assert q["answer"] == "500 dollars [plan.pdf#page=2]" and q["attempts"] == 2
    assert report["requests"]["n_sent"] == 2


def test_failures_are_counted_with_their_kind_and_reason(tmp_path):
    rows = [{"id": f"f{i}", "question": f"question {i}?", "expected": ["a.pdf"]} for i in range(6)]
    golden = golden_file(tmp_path, rows)

    def broken(body, request):
        q = last_question(body)
        if q == "question 0?":
            return AppResponse({"error": "boom"}, status=500)
        if q == "question 1?":
            return AppResponse("{not json at all", status=200)
        if q == "question 2?":
            return {"reply": {"text": "the answer is elsewhere"}}
        if q == "question 3?":
            return AppResponse(demo_reply("late"), delay_s=1.0)
        if q == "question 4?":
            return AppResponse({"error": "no"}, status=403)
        return demo_reply("fine [a.pdf]")

    settings = AppSettings(max_attempts=2, concurrency=1, timeout_s=0.3, stop_after=100)
    with DeployedApp(broken) as app:
        report = evaluate_app(golden, AppConfig(url=app.url, **DEMO), settings, metrics=[], retry_wait_s=0.01)
        by_q = {}
        for r in app.requests:
            by_q.setdefault(last_question(r["body"]), 0)
            by_q[last_question(r["body"])] += 1
    q = {x["id"]: x for x in report["questions"]}
    assert q["f0"]["error_kind"] == "server_error" and "500" in q["f0"]["error"] and "2 attempts" in q["f0"]["error"]
    assert q["f1"]["error_kind"] == "not_json" and "{not json at all" in q["f1"]["error"]
    assert q["f2"]["error_kind"] == "mapping"
    assert "message.content" in q["f2"]["error"] and '{"reply": {"text": "the answer is elsewhere"}}' in q["f2"]["error"]
    assert q["f3"]["error_kind"] == "timeout"
    assert q["f4"]["error_kind"] == "http_error" and "403" in q["f4"]["error"]
    assert q["f5"]["error"] is None and q["f5"]["answer"] == "fine [a.pdf]"
    # 500 and the timeout are retried (2 attempts each); 403, bad JSON and the mapping are not
    assert by_q == {"question 0?": 2, "question 1?": 1, "question 2?": 1, "question 3?": 2, "question 4?": 1,
                    "question 5?": 1}
    assert report["requests"]["failures"] == {"server_error": 1, "not_json": 1, "mapping": 1, "timeout": 1,
                                              "http_error": 1}
    assert report["requests"]["n_answered"] == 1 and report["requests"]["answered_share"] == pytest.approx(1 / 6)
    # failed questions are not scored as "not found": only the answered one is scored
    assert report["setups"][0]["metrics"]["doc"]["n_scored"] == 1
    assert report["setups"][0]["metrics"]["doc"]["means"]["found@1"] == 1.0


def test_a_mapping_that_finds_nothing_shows_the_first_200_characters():
    long = {"x": "y" * 500}
    mapped = map_reply(AppConfig(), long)
    assert mapped.answer is None
    shown = json.dumps(long)[:200]
    assert mapped.error.endswith(repr(shown))


def test_an_endpoint_failing_every_row_stops_after_the_stated_number(tmp_path):
    rows = [{"id": f"s{i}", "question": f"question {i}?", "expected": ["a.pdf"]} for i in range(10)]
    golden = golden_file(tmp_path, rows)
    with DeployedApp(lambda body, request: AppResponse({"error": "down"}, status=503)) as app:
        report = evaluate_app(golden, AppConfig(url=app.url), AppSettings(max_attempts=1, concurrency=1, stop_after=3),
                              metrics=[], retry_wait_s=0.01)
        n_requests = len(app.requests)
    assert n_requests == 3
    assert report["requests"]["stopped_early"] == {"after_failures_in_a_row": 3, "n_not_sent": 7}
    assert report["requests"]["failures"] == {"server_error": 3, "stopped": 7}
    assert all("failed 3 times in a row" in q["error"] for q in report["questions"][3:])


def test_replies_are_cached_and_a_rerun_sends_nothing_unless_refreshed(tmp_path):
    golden = golden_file(tmp_path, ROWS)
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    with DeployedApp(citing_app) as app:
        first = evaluate_app(golden, AppConfig(url=app.url, **DEMO), AppSettings(**FAST), cache=cache, metrics=[])
        assert len(app.requests) == 4
        again = evaluate_app(golden, AppConfig(url=app.url, **DEMO), AppSettings(**FAST), cache=cache, metrics=[])
        assert len(app.requests) == 4  # nothing sent
        fresh = evaluate_app(golden, AppConfig(url=app.url, **DEMO), AppSettings(**FAST), cache=cache, metrics=[],
                             refresh=True)
        assert len(app.requests) == 8
    assert again["requests"]["n_from_cache"] == 4 and again["requests"]["n_sent"] == 0
    assert fresh["requests"]["n_from_cache"] == 0
    assert [q["answer"] for q in again["questions"]] == [q["answer"] for q in first["questions"]]
    # a cached reply keeps the latency it had when it was asked
    assert [q["latency_ms"] for q in again["questions"]] == [q["latency_ms"] for q in first["questions"]]
    assert all(q["from_cache"] for q in again["questions"])


def test_a_stateful_app_is_played_turn_by_turn_with_its_own_answers(tmp_path):
    # a Bedrock conversation of three turns; the app keeps each conversation itself and gives
    # its id back as session_state; its answers differ from the file's references
    bedrock = {"conversationTurns": [
        {"prompt": {"content": [{"text": "Who is Spain's goalkeeper?"}]},
         "referenceResponses": [{"content": [{"text": "Iker Casillas"}]}]},
        {"prompt": {"content": [{"text": "How many caps does he have?"}]},
         "referenceResponses": [{"content": [{"text": "167"}]}]},
        {"prompt": {"content": [{"text": "And his club?"}]},
         "referenceResponses": [{"content": [{"text": "Real Madrid"}]}]}]}
    path = tmp_path / "bedrock.jsonl"
    path.write_text(json.dumps(bedrock) + "\n" + json.dumps({"conversationTurns": [
        {"prompt": {"content": [{"text": "A lone question?"}]}}]}) + "\n", encoding="utf-8")
    golden = read_golden(path)
    sessions: dict[str, list[str]] = {}
    lock = threading.Lock()

    def stateful(body, request):
        with lock:
            sid = body.get("session_state") or f"s{len(sessions) + 1}"
            seen = sessions.setdefault(sid, [])
            seen.append(last_question(body))
            return demo_reply(f"answer {len(seen)} in {sid}", session=sid)

    config = AppConfig(request={"messages": "${messages}", "session_state": "${session}"},
                       session="session_state")
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    with DeployedApp(stateful) as app:
        report = evaluate_app(golden, config.with_overrides(url=app.url), AppSettings(**FAST), cache=cache, metrics=[])
        bodies = app.bodies
    turns = [b for b in bodies if b["messages"][0]["content"] == "Who is Spain's goalkeeper?"]
    assert [b["session_state"] for b in turns] == [None, "s1", "s1"]
    # the history is the app's own answers, not the references
    assert turns[2]["messages"] == [
        {"role": "user", "content": "Who is Spain's goalkeeper?"}, {"role": "assistant", "content": "answer 1 in s1"},
        {"role": "user", "content": "How many caps does he have?"}, {"role": "assistant", "content": "answer 2 in s1"},
        {"role": "user", "content": "And his club?"}]
    q = {x["id"]: x for x in report["questions"]}
    assert q["line-1-turn-3"]["answer"] == "answer 3 in s1" and q["line-1-turn-3"]["turn"] == 3
    assert q["line-2"]["turn"] == 1 and q["line-2"]["conversation"] == "line-2"
    assert report["conversations"] == {"n": 2, "n_multi_turn": 1}
    assert [(t["turn"], t["n_questions"], t["n_answered"]) for t in report["turns"]] == [(1, 2, 2), (2, 1, 1),
                                                                                        (3, 1, 1)]


def test_a_failed_turn_fails_the_turns_after_it(tmp_path):
    bedrock = {"conversationTurns": [{"prompt": {"content": [{"text": t}]}} for t in ("one?", "two?", "three?")]}
    path = tmp_path / "bedrock.jsonl"
    path.write_text(json.dumps(bedrock) + "\n", encoding="utf-8")
    golden = read_golden(path)

    def fails_second(body, request):
        if last_question(body) == "two?":
            return AppResponse({"error": "bad"}, status=400)
        return demo_reply("ok")

    with DeployedApp(fails_second) as app:
        report = evaluate_app(golden, AppConfig(url=app.url), AppSettings(**FAST), metrics=[])
        assert len(app.requests) == 2
    kinds = [q["error_kind"] for q in report["questions"]]
    assert kinds == [None, "http_error", "earlier_turn"]


def test_latency_percentiles_by_hand():
    # numpy's linear interpolation: p50 of 10,20,30,40 is 25; p95 is 30 + 0.85 * 10 = 38.5
    assert latency_stats([40.0, 10.0, 30.0, 20.0]) == {"p50": 25.0, "p95": 38.5, "mean": 25.0, "n": 4}
    assert latency_stats([]) == {"p50": None, "p95": None, "mean": None, "n": 0}


def test_templates_placeholders_and_config_errors(tmp_path):
    values = {"question": "Q", "question_id": "1", "turn": 2, "messages": [], "history": [], "overrides": {"a": 1},
              "session": None}
    assert render_request({"q": "ask: ${question} ($$5)", "o": "${overrides}", "s": "$session", "t": "t${turn}"},
                          values) == {"q": "ask: Q ($5)", "o": {"a": 1}, "s": None, "t": "t2"}
    with pytest.raises(ConfigError, match=r"request\.context\.x: unknown placeholder \$\{questoin\}"):
        AppConfig(request={"context": {"x": "${questoin}"}})
    with pytest.raises(ConfigError, match="secrets come from the environment"):
        AppConfig(headers={"Authorization": "Bearer x"})
    bad = tmp_path / "app.yaml"
    bad.write_text("url: http://x/chat\nrespone:\n  answer: a\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="unknown key 'respone'; did you mean 'response'"):
        load_app_config(bad)
    bad.write_text("response:\n  answer: 'message.[content'\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="response.answer is not a valid JMESPath"):
        load_app_config(bad)
    good = tmp_path / "good.yaml"
    good.write_text("url: http://app/chat\nrequest:\n  messages: ${messages}\noverrides: {top: 3}\nresponse:\n"
                    "  answer: message.content\n  citations: 'context.citations[].{document: file, page: page}'\n",
                    encoding="utf-8")
    config = load_app_config(good)
    assert config.request == {"messages": "${messages}"} and config.overrides == {"top": 3}
    mapped = map_reply(config, {"message": {"content": "A"}, "context": {"citations": [
        {"file": "a.pdf", "page": 2}, {"file": "b.pdf", "page": None}, {"file": "a.pdf", "page": 2}]}})
    assert [(c.document, c.page) for c in mapped.citations] == [("a.pdf", 2), ("b.pdf", None)]


def test_an_entra_id_token_for_the_apps_scope_is_sent_as_a_bearer(tmp_path):
    # a TokenCredential of our own (no Entra ID here): azure.identity's bearer token provider
    # asks it for the app's scope and the client sends what it gives
    from azure.core.credentials import AccessToken

    from core.evaluation.app_client import app_auth_headers

    class Credential:
        scopes: list = []

        def get_token(self, *scopes, **kwargs):
            self.scopes.append(scopes)
            return AccessToken("token-1", int(time.time()) + 3600)

        def get_token_info(self, *scopes, options=None):
            from azure.core.credentials import AccessTokenInfo

            self.scopes.append(scopes)
            return AccessTokenInfo("token-1", int(time.time()) + 3600)

    credential = Credential()
    settings = AppSettings(scope="api://my-app/.default", **FAST)
    golden = golden_file(tmp_path, ROWS[:2])
    with DeployedApp(lambda body, request: demo_reply("ok")) as app:
        evaluate_app(golden, AppConfig(url=app.url), settings, metrics=[],
                     auth_headers=app_auth_headers(settings, credential))
        headers = [r["headers"] for r in app.requests]
    assert [h["authorization"] for h in headers] == ["Bearer token-1"] * 2
    assert credential.scopes and all(s == ("api://my-app/.default",) for s in credential.scopes)


def test_the_rate_limit_spaces_request_starts(tmp_path):
    golden = golden_file(tmp_path, ROWS)
    with DeployedApp(citing_app) as app:
        evaluate_app(golden, AppConfig(url=app.url, **DEMO),
                     AppSettings(requests_per_minute=600, concurrency=4, max_attempts=1), metrics=[])
        starts = sorted(r["received_at"] for r in app.requests)
    # 600 a minute: one start every 0.1 s, whatever the concurrency; arrivals jitter a little,
    # the four of them span at least the three intervals
    assert len(starts) == 4 and starts[-1] - starts[0] >= 0.25


def test_the_rate_limiter_by_hand():
    from core.evaluation.app_client import RateLimiter

    now, slept = [10.0], []
    limiter = RateLimiter(120, clock=lambda: now[0], sleep=slept.append)  # one start every 0.5 s
    for _ in range(3):
        limiter.wait()
    now[0] = 12.0  # later than every slot given: no wait
    limiter.wait()
    assert slept == [0.5, 1.0]


def test_questions_not_sent_by_the_deadline_fail_with_the_reason(tmp_path):
    rows = [{"id": f"d{i}", "question": f"question {i}?", "expected": ["a.pdf"]} for i in range(5)]
    golden = golden_file(tmp_path, rows)
    with DeployedApp(lambda body, request: AppResponse(demo_reply("late"), delay_s=0.4)) as app:
        report = evaluate_app(golden, AppConfig(url=app.url), AppSettings(deadline_s=1.0, concurrency=1,
                                                                           max_attempts=1), metrics=[])
        sent = len(app.requests)
    kinds = [q["error_kind"] for q in report["questions"]]
    # 0.4 s per question, one at a time: questions start at 0, 0.4 and 0.8 s (later on a busy
    # machine); the fourth would start after the deadline
    assert 1 <= sent <= 3 and kinds == [None] * sent + ["deadline"] * (5 - sent)
    assert "the run's deadline of 1 s passed" in report["questions"][-1]["error"]


def test_serve_lists_and_serves_app_runs(tmp_path):
    from starlette.testclient import TestClient

    from core.evaluation.app_report import save_app_run
    from core.reports import LocalFiles, ReportStore
    from core.reports.serve import create_app

    golden = golden_file(tmp_path, ROWS)
    with DeployedApp(citing_app) as app:
        report = evaluate_app(golden, AppConfig(url=app.url, **DEMO), AppSettings(**FAST), metrics=[])
    store = ReportStore(LocalFiles(tmp_path / "out"))
    save_app_run(store, "20260101T000000Z-aaaaaa", {**report, "run_id": "20260101T000000Z-aaaaaa"})
    client = TestClient(create_app(store))
    index = client.get("/")
    assert index.status_code == 200 and 'href="/apps/20260101T000000Z-aaaaaa"' in index.text
    page = client.get("/apps/20260101T000000Z-aaaaaa")
    assert page.status_code == 200 and "Cited sources" in page.text
    assert client.get("/apps/nope").status_code == 404


def test_the_bundled_example_config_reads_a_demo_reply():
    from pathlib import Path

    config = load_app_config(Path(__file__).parents[3] / "examples" / "apps" / "azure-search-openai-demo.yaml")
    reply = demo_reply("Yes, in-network only [Benefit_Options.pdf#page=3].",
                       ["Benefit_Options.pdf#page=3: Dental is covered in network."], session="s-1")
    mapped = map_reply(config, reply)
    assert mapped.answer.startswith("Yes") and mapped.session == "s-1"
    assert [(c.document, c.page) for c in mapped.citations] == [("Benefit_Options.pdf", 3)]
    assert [(c.document_id, c.text) for c in mapped.contexts] == [("Benefit_Options.pdf", "Dental is covered in network.")]
    assert mapped.context_pages == (3,)
    assert config.overrides["retrieval_mode"] == "hybrid"


def test_a_stateful_conversation_half_in_the_cache_is_played_again_from_its_start(tmp_path):
    bedrock = {"conversationTurns": [{"prompt": {"content": [{"text": t}]}} for t in ("one?", "two?")]}
    path = tmp_path / "bedrock.jsonl"
    path.write_text(json.dumps(bedrock) + "\n", encoding="utf-8")
    golden = read_golden(path)
    state = {"fail_two": True, "n": 0}

    def stateful(body, request):
        if body["messages"][-1]["content"] == "two?" and state["fail_two"]:
            return AppResponse({"error": "bad"}, status=400)
        state["n"] += 1
        sid = body.get("session_state") or f"s{state['n']}"
        return demo_reply(f"answer in {sid}", session=sid)

    config = AppConfig(request={"messages": "${messages}", "session_state": "${session}"}, session="session_state")
    cache = EmbeddingCache(tmp_path / "cache.sqlite")
    with DeployedApp(stateful) as app:
        first = evaluate_app(golden, config.with_overrides(url=app.url), AppSettings(**FAST), cache=cache, metrics=[])
        assert [q["error_kind"] for q in first["questions"]] == [None, "http_error"]
        state["fail_two"] = False
        second = evaluate_app(golden, config.with_overrides(url=app.url), AppSettings(**FAST), cache=cache, metrics=[])
        bodies = app.bodies[2:]
    # turn one was cached with session s1, which the app may have dropped: both turns are sent again
    assert [(b["messages"][-1]["content"], b["session_state"]) for b in bodies] == [("one?", None), ("two?", "s2")]
    assert [q["answer"] for q in second["questions"]] == ["answer in s2", "answer in s2"]
    assert not any(q["from_cache"] for q in second["questions"])


def test_retry_after_in_seconds_or_as_a_date():
    from email.utils import format_datetime
    from datetime import datetime, timedelta, timezone

    from core.models.endpoint import retry_after_seconds

    assert retry_after_seconds("3") == 3.0 and retry_after_seconds(" 0.5 ") == 0.5
    assert retry_after_seconds(None) is None and retry_after_seconds("soon") is None
    assert retry_after_seconds("-1") is None
    later = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=30), usegmt=True)
    assert 25 <= retry_after_seconds(later) <= 30
    assert retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0


def test_a_credential_that_gives_no_token_is_asked_once_and_stops_the_run(tmp_path):
    # a TokenCredential that fails as DefaultAzureCredential does when no credential is found:
    # it is asked once, the first question fails with its error, nothing is sent, and the
    # rest are not sent, with the reason
    from azure.core.exceptions import ClientAuthenticationError

    from core.evaluation.app_client import app_auth_headers

    class Failing:
        calls = 0

        def get_token(self, *scopes, **kwargs):
            Failing.calls += 1
            raise ClientAuthenticationError("DefaultAzureCredential failed to retrieve a token")

        def get_token_info(self, *scopes, options=None):
            return self.get_token(*scopes)

    settings = AppSettings(scope="api://my-app/.default", stop_after=3, **FAST)
    golden = golden_file(tmp_path, ROWS)
    with DeployedApp(lambda body, request: demo_reply("ok")) as app:
        report = evaluate_app(golden, AppConfig(url=app.url), settings, metrics=[],
                              auth_headers=app_auth_headers(settings, Failing()))
        n_requests = len(app.requests)
    assert Failing.calls == 1 and n_requests == 0
    assert report["requests"]["failures"] == {"auth": 1, "stopped": 3}
    stopped = report["requests"]["stopped_early"]
    assert stopped["n_not_sent"] == 3 and "failed to retrieve a token" in stopped["reason"]
    assert all("cannot be called" in q["error"] and "failed to retrieve a token" in q["error"]
               for q in report["questions"][1:])
    from core.evaluation.app_report import format_app_report

    assert "stopped early: no credentials (" in format_app_report(report)


def test_a_retry_after_past_the_deadline_is_not_waited_and_says_so(tmp_path):
    golden = golden_file(tmp_path, ROWS[:1])
    with DeployedApp(lambda body, request: AppResponse({"error": "busy"}, status=429,
                                                       headers={"Retry-After": "30"})) as app:
        started = time.monotonic()
        report = evaluate_app(golden, AppConfig(url=app.url), AppSettings(deadline_s=5.0, **FAST), metrics=[],
                              retry_wait_s=0.01)
        elapsed = time.monotonic() - started
        n_requests = len(app.requests)
    q = report["questions"][0]
    # one request: waiting the 30 s asked would pass the 5 s deadline, so it is not retried
    assert n_requests == 1 and elapsed < 4
    assert q["error_kind"] == "rate_limited"
    assert "asked to wait 30 s (Retry-After), past the run's deadline of 5 s" in q["error"]


def test_the_apps_address_is_shown_without_its_credentials(tmp_path):
    golden = golden_file(tmp_path, ROWS[:1])
    with DeployedApp(lambda body, request: AppResponse({"error": "no"}, status=500)) as app:
        url = app.url.replace("http://", "http://alice:s3cret@") + "?code=k3y"
        report = evaluate_app(golden, AppConfig(url=url), AppSettings(max_attempts=1, concurrency=1), metrics=[])
        headers = app.requests[0]["headers"]
    text = json.dumps(report)
    assert "s3cret" not in text and "k3y" not in text and "alice" not in text
    assert report["app"]["url"] == app.url
    assert report["questions"][0]["error"].startswith(app.url + ": ")
    # the user and password are sent as HTTP Basic auth (RFC 7617): base64 of "alice:s3cret"
    assert headers["authorization"] == "Basic YWxpY2U6czNjcmV0"
    with pytest.raises(ConfigError, match="give one way to authenticate"):
        evaluate_app(golden, AppConfig(url=url), AppSettings(api_key="k", max_attempts=1), metrics=[])


def test_the_request_timeout_bounds_a_reply_trickled_a_byte_at_a_time(tmp_path):
    # each byte comes within the timeout (0.2 s apart, timeout 1 s), but the whole reply would
    # take about 10 s: the request fails as a timeout after about 1 s, and is retried once
    golden = golden_file(tmp_path, ROWS[:1])
    reply = AppResponse({"message": {"content": "x" * 50}}, trickle_s=0.2)
    with DeployedApp(lambda body, request: reply) as app:
        started = time.monotonic()
        report = evaluate_app(golden, AppConfig(url=app.url), AppSettings(timeout_s=1.0, max_attempts=2,
                                                                          concurrency=1),
                              metrics=[], retry_wait_s=0.01)
        elapsed = time.monotonic() - started
    q = report["questions"][0]
    assert q["error_kind"] == "timeout" and q["attempts"] == 2
    assert 2.0 <= elapsed < 5.0


def test_the_page_shows_a_dash_where_no_citation_is_right(tmp_path):
    import re as regex

    from core.reports.pages.app_page import render_app

    golden = golden_file(tmp_path, ROWS)
    with DeployedApp(citing_app) as app:
        report = evaluate_app(golden, AppConfig(url=app.url, **DEMO), AppSettings(**FAST), metrics=[])
    page = render_app(report)
    rows = {m.group(1): m.group(0) for m in regex.finditer(r"<tr><td>(q\d)</td>.*?</tr>", page)}
    # first right rank at the page grain: q1 cites it first, q2 second, q3 only the document, q4 nothing
    ranks = {q: regex.findall(r'<td class="n">([^<]*)</td>', row)[1] for q, row in rows.items()}
    assert ranks == {"q1": "1", "q2": "2", "q3": "-", "q4": "-"}
    assert not any(">None<" in row for row in rows.values())
