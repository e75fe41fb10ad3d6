"""``ragtune evaluate-app``: the golden questions asked of a deployed RAG app, its replies scored.

Every question is sent to the app (:class:`~core.evaluation.app_client.AppClient`); the turns
of a conversation (:mod:`core.golden.conversations`) are sent in order, each with the app's
own earlier answers as its history (and, for an app that keeps the state itself, what its
previous reply gave as ``session``). Conversations run side by side, at most
``RAGTUNE_APP_CONCURRENCY`` requests at once.

What is scored, each with the project's own measures:

- the cited sources against ``expected``, at the document and page grains: the citations, in
  the order cited, are a ranking, judged and scored by
  :func:`core.metrics.retrieval.evaluate_rankings` (found@k, recall@k, precision@k, nDCG@k,
  MRR with the same bootstrap intervals as retrieval); so are the retrieved contexts, when the
  app returns them (and at the evidence grain, their text);
- the answers, by :func:`core.metrics.answers.answer_report`: unitxt's metrics and, with a
  judge, Amazon Bedrock's (correctness, completeness, faithfulness, helpfulness) and answer
  relevance; metrics that read the passages are left out when the app returns none;
- refusals (answers matching the config's ``refusals``), latency (p50, p95 over the replies),
  and every failed request with its kind and reason.

A failed request is that question's failure, never a 0: it is counted apart and left out of
every mean (the share answered is reported, and can be gated). After ``RAGTUNE_APP_STOP_AFTER``
failures in a row no more requests are sent (:class:`core.models.breaker.CircuitBreaker`): the
questions left fail with that reason and what was scored is kept.
"""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from core.chunking.base import Chunk
from core.documents.base import normalize_id
from core.evaluation.app_client import AppClient, Exchange
from core.evaluation.app_config import AppConfig, MappedReply, refused
from core.evaluation.envelope import envelope, golden_block
from core.evaluation.retrieval import package_versions
from core.golden.conversations import conversations
from core.metrics.answers import DEFAULT_METRICS, JUDGE_METRICS, answer_report
from core.metrics.retrieval import DEFAULT_KS, TOP_K, evaluate_rankings
from core.models.breaker import CircuitBreaker
from core.models.spend import carry_spend
from core.rag.records import AnswerRecord
from core.redaction import shown_url

if TYPE_CHECKING:
    from core.golden.conversations import Conversation
    from core.golden.types import GoldenQuestion, GoldenSet
    from core.models.cache import EmbeddingCache
    from core.models.chat import ChatModel
    from core.settings import AppSettings

logger = logging.getLogger(__name__)

__all__ = ["APP_REPORT_SCHEMA_VERSION", "AppTurn", "CONTEXT_METRICS", "answer_metric_names", "evaluate_app", "play"]

#: Version of the app report's JSON layout; the major part changes on incompatible changes.
APP_REPORT_SCHEMA_VERSION = "1.0"
#: The ranking of the cited sources, as a report's setup name (the gate checks it).
CITATIONS = "citations"
#: The ranking of the retrieved contexts, when the app returns them.
CONTEXTS = "contexts"
#: Answer metrics that read the passages: left out when the app returns no contexts.
CONTEXT_METRICS: tuple[str, ...] = ("unitxt.faithfulness", "unitxt.context_correctness", "judge.faithfulness")


@dataclass(frozen=True)
class AppTurn:
    """One question asked of the app, and what came of it.

    Attributes:
        question: the golden question as sent: its ``history`` is the conversation the app
            saw (its own earlier answers).
        conversation: the conversation's key (:class:`core.golden.conversations.Conversation`).
        turn: the turn, 1 first.
        exchange: the request and reply, or None when nothing was sent.
        reply: what the response mapping read.
        error: why the question has no answer, else None.
        error_kind: the failure's kind (``Exchange.error_kind``, ``mapping``, ``stopped``,
            ``earlier_turn``), or None.
    """

    question: Any
    conversation: str
    turn: int
    exchange: Exchange | None
    reply: MappedReply
    error: str | None = None
    error_kind: str | None = None

    @property
    def ok(self) -> bool:
        """True when the question got an answer."""
        return self.error is None and self.reply.answer is not None


def _failed(question: GoldenQuestion, key: str, turn: int, error: str, kind: str,
            exchange: Exchange | None = None) -> AppTurn:
    return AppTurn(question, key, turn, exchange, MappedReply(None, error=error), error, kind)


def _play_conversation(client: AppClient, conversation: Conversation, breaker: CircuitBreaker, *,
                       fresh: bool = False) -> list[AppTurn]:
    """Play one conversation's turns in order (see :func:`play`)."""
    history: list[dict[str, str]] = []
    session: Any = None
    out: list[AppTurn] = []
    stateful = client.config.session is not None
    for number, q in enumerate(conversation.turns, start=1):
        sent = replace(q, history=tuple((m["role"], m["content"]) for m in history))
        if out and not out[-1].ok:
            out.append(_failed(sent, conversation.key, number, f"not sent: turn {number - 1} of this conversation "
                               "failed, so the app's history is broken", "earlier_turn"))
            continue
        reason = breaker.blocked()
        if reason is not None:
            out.append(_failed(sent, conversation.key, number, f"not sent: {reason}", "stopped"))
            continue
        body = client.request_body(question=q.question, question_id=q.id, turn=number, history=history,
                                   session=session)
        exchange = None if fresh else client.cached(body)
        if exchange is None and stateful and number > 1 and not fresh and all(t.exchange and t.exchange.from_cache
                                                                              for t in out):
            # the app keeps the conversation itself: a turn it never saw after cached ones would
            # carry a state the app may no longer hold, so the conversation is played afresh
            return _play_conversation(client, conversation, breaker, fresh=True)
        if exchange is None:
            exchange = client.exchange(body, use_cache=False)
        mapped = client.read(exchange)
        if mapped.error is not None:
            kind = exchange.error_kind or "mapping"
            # no credentials: no later request can succeed, so nothing more is sent
            breaker.record(False, mapped.error, fatal=kind == "auth")
            out.append(_failed(sent, conversation.key, number, mapped.error, kind, exchange))
            continue
        breaker.record(True)
        out.append(AppTurn(sent, conversation.key, number, exchange, mapped))
        history += [{"role": "user", "content": q.question}, {"role": "assistant", "content": mapped.answer or ""}]
        session = mapped.session
    return out


def play(client: AppClient, conversations: Sequence[Any], *, concurrency: int, stop_after: int | None,
         on_turn: Callable[[int, int], None] | None = None) -> tuple[list[AppTurn], Any]:
    """Ask the app every turn of every conversation.

    Conversations run side by side in ``concurrency`` threads; the turns of one run in order,
    each sent with the app's answers to the earlier ones as its history. A turn after a
    failed one is not sent (its history would be broken) and fails with that reason. After
    ``stop_after`` failed requests in a row nothing more is sent.

    Args:
        client: the app's client.
        conversations: from :func:`core.golden.conversations.conversations`.
        concurrency: conversations played at once (>= 1).
        stop_after: failures in a row that stop the run (None: never).
        on_turn: called as ``on_turn(done, total)`` after each turn (from worker threads).

    Returns:
        ``(turns, breaker)``: one :class:`AppTurn` per question, in the conversations' order,
        and the :class:`~core.models.breaker.CircuitBreaker` (its ``skipped`` counts the
        questions not sent).
    """
    breaker = CircuitBreaker(stop_after, f"the app at {shown_url(client.url)}")
    total = sum(len(c.turns) for c in conversations)
    done = 0
    lock = threading.Lock()

    def run(conversation: Conversation) -> list[AppTurn]:
        nonlocal done
        turns = _play_conversation(client, conversation, breaker)
        if on_turn is not None:
            with lock:
                done += len(turns)
                count = done
            on_turn(count, total)
        return turns

    if not conversations:
        return [], breaker
    with ThreadPoolExecutor(max_workers=max(1, min(int(concurrency), len(conversations))),
                            thread_name_prefix="ragtune-app") as pool:
        results = list(pool.map(carry_spend(run), conversations))
    return [t for turns in results for t in turns], breaker


# ------------------------------------------------------------------------------------ scoring


def _chunk(key: str, document: str | None, page: int | None, text: str = "") -> Any:
    return Chunk(text=text, chunk_id=key,
                 metadata={"document_id": normalize_id(document) if document else "", "pages": [page] if page else []})


def _rankings(turns: Sequence[AppTurn], which: str) -> dict[str, list[Any]]:
    """Question id -> the cited sources (or contexts) of each answered question, as chunks."""
    out = {}
    for t in turns:
        if not t.ok:
            continue
        if which == CITATIONS:
            out[t.question.id] = [_chunk(f"cited-{i}", c.document, c.page) for i, c in enumerate(t.reply.citations)]
        else:
            pages = t.reply.context_pages or (None,) * len(t.reply.contexts)
            out[t.question.id] = [_chunk(f"context-{i}", c.document_id, p, c.text)
                                  for i, (c, p) in enumerate(zip(t.reply.contexts, pages))]
    return out


def _setup(name: str, questions: Sequence[Any], rankings: dict[str, list[Any]], grains: Sequence[str],
           rank_grain: str) -> tuple[dict[str, Any], dict[str, int | None]]:
    """A report setup of one ranking (the shape ``core.evaluation.gate`` reads) and each
    answered question's first right rank at ``rank_grain``."""
    answered = [q for q in questions if q.id in rankings]
    results = evaluate_rankings(answered, rankings, grains=grains, ks=DEFAULT_KS)
    rank = results[rank_grain]
    scored = [r for r in rank.per_question.values() if r.scores is not None]
    return ({"name": name, "key": name, "status": "ok",
             "metrics": {g: res.aggregate.to_dict() for g, res in results.items()},
             "found_top10": sum(1 for r in scored if r.scores[f"found@{TOP_K}"] > 0),
             "found_first": sum(1 for r in scored if r.scores["found@1"] > 0), "n_scored": len(scored)},
            {qid: r.first_relevant_rank for qid, r in rank.per_question.items()})


def latency_stats(values: Sequence[float]) -> dict[str, Any]:
    """``{p50, p95, mean, n}`` of latencies in milliseconds (None each when there is none);
    percentiles by linear interpolation (``numpy.percentile``'s default)."""
    if not values:
        return {"p50": None, "p95": None, "mean": None, "n": 0}
    x = np.asarray(values, dtype=np.float64)
    return {"p50": round(float(np.percentile(x, 50)), 3), "p95": round(float(np.percentile(x, 95)), 3),
            "mean": round(float(x.mean()), 3), "n": int(x.size)}


def _refusals(turns: Sequence[AppTurn], patterns: Sequence[str]) -> dict[str, Any]:
    answered = [t for t in turns if t.ok]
    ids = [t.question.id for t in answered if refused(t.reply.answer, patterns)]
    unanswerable = {t.question.id for t in answered if (t.question.metadata or {}).get("kind") == "unanswerable"}
    out: dict[str, Any] = {"n_refused": len(ids), "n_answered": len(answered),
                           "share": len(ids) / len(answered) if answered else None, "question_ids": ids}
    if unanswerable:
        out["unanswerable"] = {"n": len(unanswerable), "n_refused": sum(1 for i in ids if i in unanswerable)}
        out["answerable"] = {"n": len(answered) - len(unanswerable),
                             "n_refused": sum(1 for i in ids if i not in unanswerable)}
    return out


def answer_metric_names(config: AppConfig, judge: ChatModel | None, metrics: Sequence[str] | None = None) -> list[str]:
    """The answer metrics :func:`evaluate_app` computes: ``metrics`` (None: unitxt's, and the
    judge's with a judge), without those that read the passages when the config reads no
    contexts (:data:`CONTEXT_METRICS`)."""
    names = list(metrics) if metrics is not None else [*DEFAULT_METRICS, *([f"judge.{m}" for m in JUDGE_METRICS] if judge else [])]
    if config.contexts is None:
        names = [n for n in names if n not in CONTEXT_METRICS]
    return names


_answer_metrics = answer_metric_names


def _turns_table(turns: Sequence[AppTurn], answers: dict[str, Any], first_ranks: dict[str, int | None]) -> list[dict]:
    """Per turn number (1 first): questions, answered, citations found in the top 10 among the
    scorable, and each answer metric's mean over its scored questions at that turn."""
    by_id = {q["question_id"]: q for q in answers.get("questions") or []}
    rows: dict[int, dict[str, Any]] = {}
    for t in turns:
        row = rows.setdefault(t.turn, {"turn": t.turn, "n_questions": 0, "n_answered": 0, "n_found": 0,
                                       "n_scorable": 0, "metrics": {}})
        row["n_questions"] += 1
        row["n_answered"] += int(t.ok)
        if t.question.id in first_ranks and t.question.expected:
            row["n_scorable"] += 1
            rank = first_ranks[t.question.id]
            row["n_found"] += int(rank is not None and rank <= TOP_K)
        for m in (by_id.get(t.question.id) or {}).get("metrics") or []:
            if m.get("score") is not None:
                row["metrics"].setdefault(m["name"], []).append(m["score"])
    for row in rows.values():
        row["metrics"] = {k: round(float(np.mean(v)), 6) for k, v in row["metrics"].items()}
    return [rows[k] for k in sorted(rows)]


def _question_rows(turns: Sequence[AppTurn], setups: Sequence[dict[str, Any]],
                   first_ranks: dict[str, dict[str, int | None]], config: AppConfig) -> list[dict[str, Any]]:
    """The report's record of each question: what was asked, answered and cited, the first
    right rank per ranking, the failure, the latency and whether the reply came from the cache."""
    out = []
    for t in turns:
        q = t.question
        out.append({
            "id": q.id, "line": q.line, "question": q.question, "conversation": t.conversation, "turn": t.turn,
            "expected": [str(x) for x in q.expected], "answer": t.reply.answer,
            "citations": [c.text or c.document for c in t.reply.citations],
            "first_relevant_rank": {s["name"]: first_ranks[s["name"]].get(q.id) for s in setups
                                    if q.id in first_ranks[s["name"]]},
            "error": t.error, "error_kind": t.error_kind,
            "latency_ms": None if not t.exchange or t.exchange.latency_ms is None else round(t.exchange.latency_ms, 3),
            "from_cache": bool(t.exchange and t.exchange.from_cache),
            "attempts": t.exchange.attempts if t.exchange else 0,
            "refused": bool(t.ok and refused(t.reply.answer, config.refusals)),
        })
    return out


def _requests(turns: Sequence[AppTurn], client: AppClient, breaker: CircuitBreaker, stop_after: int) -> dict[str, Any]:
    """The report's ``requests``: questions answered and failed (by kind), requests sent and
    replies from the cache, and whether the run stopped early."""
    failures: dict[str, int] = {}
    for t in turns:
        if t.error_kind:
            failures[t.error_kind] = failures.get(t.error_kind, 0) + 1
    n_answered = sum(1 for t in turns if t.ok)
    return {"n_questions": len(turns), "n_answered": n_answered, "n_failed": len(turns) - n_answered,
            "answered_share": n_answered / len(turns) if turns else None,
            "n_sent": client.n_sent, "n_from_cache": client.n_from_cache, "failures": failures,
            "stopped_early": None if not breaker.skipped else {
                "after_failures_in_a_row": stop_after, "n_not_sent": breaker.skipped,
                **({"reason": breaker.fatal_error} if breaker.fatal_error else {})}}


def _app_settings(settings: AppSettings) -> dict[str, Any]:
    """The client's settings as a report keeps them (how it authenticated, never with what)."""
    return {"concurrency": settings.concurrency, "requests_per_minute": settings.requests_per_minute,
            "timeout_s": settings.timeout_s, "deadline_s": settings.deadline_s, "max_attempts": settings.max_attempts,
            "stop_after": settings.stop_after,
            "auth": "key" if settings.api_key else ("entra-id" if settings.scope else "none")}


def evaluate_app(
    golden: GoldenSet,
    config: AppConfig,
    settings: AppSettings,
    *,
    cache: EmbeddingCache | None = None,
    refresh: bool = False,
    judge: ChatModel | None = None,
    judge_repeat: int = 1,
    metrics: Sequence[str] | None = None,
    on_turn: Callable[[int, int], None] | None = None,
    retry_wait_s: float = 0.5,
    auth_headers: Callable[[], Any] | None = None,
) -> dict[str, Any]:
    """Ask the app every golden question and score its replies (see the module docstring).

    Args:
        golden: the ``GoldenSet``.
        config: the request template and response mapping (with the URL).
        settings: ``core.settings.AppSettings``.
        cache: an ``EmbeddingCache`` keeping the replies (None: none kept).
        refresh: ask the app again even for replies the cache holds.
        judge: the judge ``ChatModel``, or None.
        judge_repeat: judge calls per item and metric (>= 1).
        metrics: answer metric names (None: unitxt's, and the judge's with a judge; an empty
            list: none, only the citations, refusals and requests are scored).
        on_turn: progress callback ``(done, total)``.
        retry_wait_s: the first retry wait, in seconds.
        auth_headers: overrides the settings' auth (see ``AppClient``).

    Returns:
        The report (not yet stored): ``schema_version``, ``kind: "app"``, ``golden``, ``app``
        (URL without its query, the config, the client's settings), ``evaluation`` (``ks``,
        ``grains``, ``rank_grain``), ``setups`` (``citations`` and ``contexts`` scored as
        rankings, as ``core.evaluation.gate`` reads them), ``picks``, ``answers``
        (``AnswerReport.to_dict()``), ``refusals``, ``latency_ms``, ``requests`` (sent, from
        the cache, failed by kind, stopped early), ``turns`` (per turn number), ``questions``
        (one per question), ``timings_s``.

    Raises:
        ConfigError: no URL, bad metric names, or a judge metric without a judge.
    """
    started = datetime.now(timezone.utc)
    t0 = time.perf_counter()
    names = _answer_metrics(config, judge, metrics)
    deadline = time.monotonic() + settings.deadline_s if settings.deadline_s else None
    client = AppClient(config, settings, cache=cache, refresh=refresh, deadline=deadline, retry_wait_s=retry_wait_s,
                       auth_headers=auth_headers)
    convs = conversations(golden.questions, getattr(golden, "format", "ragtune"))
    turns, breaker = play(client, convs, concurrency=settings.concurrency, stop_after=settings.stop_after,
                          on_turn=on_turn)
    ask_s = time.perf_counter() - t0
    sent = [t.question for t in turns]

    rank_grain = "page" if any(q.pages for q in sent) else "doc"
    setups, first_ranks = [], {CITATIONS: {}, CONTEXTS: {}}
    if config.has_citations:
        setup, first_ranks[CITATIONS] = _setup(CITATIONS, sent, _rankings(turns, CITATIONS), ("doc", "page"),
                                               rank_grain)
        setups.append(setup)
    if config.contexts is not None:
        setup, first_ranks[CONTEXTS] = _setup(CONTEXTS, sent, _rankings(turns, CONTEXTS), ("doc", "page", "evidence"),
                                              rank_grain)
        setups.append(setup)

    records = [AnswerRecord(question_id=t.question.id, question=t.question.question, answer=t.reply.answer,
                            contexts=t.reply.contexts, error=t.error, generator_id=client.model_id,
                            duration_s=(t.exchange.latency_ms or 0.0) / 1000.0 if t.exchange else 0.0)
               for t in turns]
    t1 = time.perf_counter()
    answers = (answer_report(sent, records, judge=judge, metrics=names, judge_repeat=judge_repeat).to_dict()
               if names else {"metrics": [], "questions": [], "n_questions": len(records),
                              "n_answered": sum(1 for r in records if r.ok),
                              "n_failed": sum(1 for r in records if not r.ok), "overall_score": None})
    wanted = _answer_metrics(AppConfig(contexts="*"), judge, metrics)  # what would run had the app contexts
    left_out = [n for n in CONTEXT_METRICS if config.contexts is None and n in wanted]
    if left_out:
        answers["left_out"] = {"metrics": left_out, "reason": "the app's replies are not read for contexts "
                                                              "(response.contexts): nothing to judge them against"}
    score_s = time.perf_counter() - t1

    latencies = [t.exchange.latency_ms for t in turns if t.exchange and t.exchange.latency_ms is not None
                 and t.exchange.error is None]
    questions = _question_rows(turns, setups, first_ranks, config)
    golden_part = golden_block(golden.path, golden, n_questions=len(turns), format=getattr(golden, "format", "ragtune"),
                               warnings=[p.to_dict() for p in golden.warnings])
    return envelope("app", {
        "app": {"url": shown_url(client.url), "model_id": client.model_id,
                "config": {**config.to_dict(), "url": shown_url(client.url)},
                "settings": _app_settings(settings)},
        "evaluation": {"ks": list(DEFAULT_KS), "top_k": TOP_K, "grains": ["doc", "page"], "rank_grain": rank_grain,
                       "rank_grain_reason": "page when a question has page labels, else doc"},
        "setups": setups,
        "picks": {"finds_the_most": CITATIONS if config.has_citations else None, "best_for_balance": None,
                  "best_for_time": None, "tied_with_best": {}, "mcnemar": {},
                  "rules": {"finds_the_most": "the app's cited sources", "best_for_balance": "-", "best_for_time": "-"},
                  "reason": None if config.has_citations else "the replies are not read for citations"},
        "answers": answers,
        "refusals": _refusals(turns, config.refusals),
        "latency_ms": latency_stats(latencies),
        "requests": _requests(turns, client, breaker, settings.stop_after),
        "conversations": {"n": len(convs), "n_multi_turn": sum(1 for c in convs if len(c.turns) > 1)},
        "turns": _turns_table(turns, answers, first_ranks[CITATIONS]),
        "questions": questions,
    }, schema_version=APP_REPORT_SCHEMA_VERSION, started=started, golden=golden_part,
        timings_s={"ask_s": ask_s, "score_s": score_s, "total_s": time.perf_counter() - t0},
        versions=package_versions())
