"""``--dry-run``: the calls a command would make to chat models, judges and apps, before any is sent.

Each planner builds a :class:`core.models.costs.CostPlan` from what is known without sending
anything: the golden file, the config, and the caches. Where a request's text is known it is
counted exactly and looked up in the cache (an app's reply to a first turn; a judge request
whose answer the app cache already holds); where it depends on a reply not yet had, it is
estimated (marked ``~``) and counted as not cached:

- an answer not yet had is taken to be as long as the question's reference answer (or, without
  one, the generator's token limit);
- passages not yet retrieved are taken to be ``k`` chunks of the chunk size;
- a judge's reply is a number: :data:`JUDGE_REPLY` tokens.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from core.evaluation.app import _answer_metrics
from core.evaluation.app_client import AppClient
from core.evaluation.unjudged import umbrela_messages
from core.golden.conversations import conversations
from core.metrics.answer_scores import AnswerItem, passages_of
from core.metrics.llm_judge import JUDGE_METRICS, judge_messages
from core.models.costs import CostPlan, count_tokens, message_tokens
from core.rag.records import Context
from core.rag.template import DEFAULT_SYSTEM_MESSAGE, DEFAULT_USER_MESSAGE, NUMBER_OF_CHUNKS
from core.text import plural

if TYPE_CHECKING:
    from core.evaluation.app_config import AppConfig
    from core.golden.types import GoldenSet
    from core.models.cache import EmbeddingCache
    from core.models.chat import ChatModel
    from core.settings import AppSettings

__all__ = ["JUDGE_REPLY", "plan_app", "plan_compare_chunking", "plan_evaluate", "plan_optimize"]

#: A judge's reply, whose tokens stand for every judge call's completion.
JUDGE_REPLY = "0.75"


def _judge_calls(plan: CostPlan, judge: ChatModel, names: Sequence[str], item: Any, repeat: int, *, exact: bool,
                 temperature: float | None = 0.0) -> None:
    """Count the judge's calls on one item (``names``: short judge metric names), as
    ``core.metrics.llm_judge.JudgeEvaluator`` makes them."""
    group = plan.group(judge.model_id, "judge")
    reply = count_tokens(JUDGE_REPLY)
    for name in names:
        if name == "faithfulness" and exact and not passages_of(item):
            continue  # scored 0 without a call
        messages = judge_messages(JUDGE_METRICS[name], item)
        tokens = message_tokens(messages)
        for r in range(repeat):
            model = judge.sampled(r) if r and callable(getattr(judge, "sampled", None)) else judge
            cached = exact and callable(getattr(model, "cached", None)) and model.cached(
                messages, max_completion_tokens=None, temperature=temperature)
            group.add(tokens, reply, cached=bool(cached), exact=exact)


def plan_app(golden: GoldenSet, config: AppConfig, settings: AppSettings, *, cache: EmbeddingCache | None = None,
             refresh: bool = False, judge: ChatModel | None = None,
             judge_repeat: int = 1, metrics: Sequence[str] | None = None) -> CostPlan:
    """The plan of ``ragtune evaluate-app`` (see the module docstring): the app's requests
    (cached or to send; their tokens are the app's own, not counted), and the judge's calls.

    Turns whose history is known (a first turn, or a later one whose earlier turns the cache
    holds) are rendered and looked up exactly; the judge's requests on an answer the cache
    holds are built and counted exactly, the others estimated.
    """
    plan = CostPlan()
    client = AppClient(config, settings, cache=cache, refresh=refresh)
    app = plan.group(client.model_id, "app", tokens=False)
    app.notes.append("the app's requests spend the app's own tokens, which are not counted here")
    names = [n.split(".", 1)[1] for n in _answer_metrics(config, judge, metrics) if n.startswith("judge.")]
    for conv in conversations(golden.questions, getattr(golden, "format", "ragtune")):
        history: list[dict[str, str]] = []
        session: Any = None
        known = True
        for number, q in enumerate(conv.turns, start=1):
            expected = tuple(dict.fromkeys(t.document_id for t in q.expected))
            past = tuple((m["role"], m["content"]) for m in history)
            mapped = None
            if known:
                body = client.request_body(question=q.question, question_id=q.id, turn=number, history=history,
                                           session=session)
                hit = client.cached(body)
                app.add(0, 0, cached=hit is not None)
                mapped = client.read(hit) if hit is not None else None
            else:
                app.add(0, 0, cached=False, exact=False)
            if mapped is not None and mapped.error is None:
                item = AnswerItem(q.id, q.question, past, q.reference, expected, mapped.answer, None, mapped.contexts)
                history += [{"role": "user", "content": q.question}, {"role": "assistant", "content": mapped.answer}]
                session = mapped.session
                exact = True
            else:
                known = False
                item = AnswerItem(q.id, q.question, past, q.reference, expected, q.reference or "", None, ())
                exact = False
            if judge is not None and names:
                _judge_calls(plan, judge, names, item, judge_repeat, exact=exact)
    if judge is not None and any(not g.exact for g in plan.groups if g.purpose == "judge"):
        plan.notes.append("judge requests on answers the app cache does not hold yet are estimated with the "
                          "reference answer as the answer and no passages")
    return plan


def plan_evaluate(golden: GoldenSet, *, chat_model: ChatModel | None, judge: ChatModel | None, k: int,
                  chunk_size_tokens: int,
                  judge_repeat: int = 1, label_depth: int = 0, n_setups: int = 0, answers: bool = True) -> CostPlan:
    """The plan of ``ragtune evaluate``: with ``answers``, one generation per question (when a
    chat model is configured; the extractive baseline calls none) and the judge's calls on each
    answer; and, with ``label_depth``, the judge's relevance labels of retrieved chunks (at most
    ``n_setups * label_depth`` per question, fewer once the setups' results overlap and the
    golden file already labels some). Without ``answers`` (``--no-generate``, or a run over
    targets) nothing is generated and no answer is judged: the judge only grades results.
    Every prompt is estimated (answers and passages are not had before the run)."""
    plan = CostPlan()
    # a passage of chunk_size tokens, in the tokenizer's own units
    passage = " ".join(["word"] * max(1, chunk_size_tokens))
    limit = getattr(chat_model, "max_completion_tokens", None) or 1024
    for q in golden.questions:
        history = [{"role": r, "content": c} for r, c in q.history]
        answer_tokens = count_tokens(q.reference) if q.reference else limit
        if answers and chat_model is not None and getattr(chat_model, "chat", None) is not None:
            user = DEFAULT_USER_MESSAGE.format(reference_documents="", question=q.question)
            prompt = message_tokens([{"role": "system", "content": DEFAULT_SYSTEM_MESSAGE}, *history,
                                     {"role": "user", "content": user}]) + k * count_tokens(passage)
            plan.group(chat_model.model_id, "answers").add(prompt, answer_tokens, cached=False, exact=False)
        if judge is not None:
            if answers:
                contexts = tuple(Context(passage) for _ in range(k))
                item = AnswerItem(q.id, q.question, tuple(q.history), q.reference, tuple(q.document_ids),
                                  q.reference or passage, None, contexts)
                _judge_calls(plan, judge, list(JUDGE_METRICS), item, judge_repeat, exact=False)
            if label_depth and n_setups and q.expected:  # a question without expected documents is not graded
                tokens = message_tokens(umbrela_messages(q.question, passage))
                group = plan.group(judge.model_id, "labels")
                for _ in range(label_depth * n_setups):
                    group.add(tokens, count_tokens("2"), cached=False, exact=False)
    if answers and chat_model is not None:
        plan.notes.append(f"answers estimated as long as the reference answer (else the {limit}-token limit), from "
                          f"{k} passages of {chunk_size_tokens} tokens")
    if label_depth and judge is not None:
        plan.notes.append(f"relevance labels counted at most: the top {label_depth} of {n_setups} setups per question, "
                          "before results shared by setups, already labelled or cached are taken off")
    return plan


def _filler(n_chars: int) -> str:
    """Text of about ``n_chars`` characters, for a passage not yet had."""
    return ("lorem ipsum dolor sit amet consectetur " * (n_chars // 39 + 1))[:max(1, n_chars)]


def plan_optimize(golden: GoldenSet, *, chat_model: ChatModel | None, judge: ChatModel | None, max_evals: int,
                  k: int = NUMBER_OF_CHUNKS, chunk_size_tokens: int = 256) -> CostPlan:
    """The plan of ``ragtune optimize``: at most ``max_evals`` configurations, each one
    :func:`plan_evaluate` over every question (its rungs of questions together; configurations
    whose generator is the extractive baseline call no chat model, and evaluations already
    stored call nothing: the counts are upper bounds);
    ``k``: chunks handed to the generator per question (``core.rag.template.NUMBER_OF_CHUNKS``,
    the default of a configuration without ``number_of_chunks``)."""
    plan = plan_evaluate(golden, chat_model=chat_model, judge=judge, k=k, chunk_size_tokens=chunk_size_tokens)
    for g in plan.groups:
        g.calls, g.prompt_tokens, g.completion_tokens = (g.calls * max_evals, g.prompt_tokens * max_evals,
                                                         g.completion_tokens * max_evals)
    plan.notes.append(f"at most {plural(max_evals, 'configuration')}, each scored at most once on every question (with rungs "
                      "of questions, in parts: one evaluation a rung); those answered by the extractive baseline, and "
                      "those already stored, call no model")
    return plan


def plan_compare_chunking(golden: GoldenSet, *, chat_model: ChatModel | None, judge: ChatModel | None, n_builds: int,
                          budget_chars: int) -> CostPlan:
    """The plan of ``ragtune compare-chunking`` with a chat model and a judge: per build
    (technique and size) and question, one answer from the handed text (``budget_chars``) and
    one judgement of its correctness."""
    plan = CostPlan()
    if chat_model is None or judge is None:
        plan.notes.append("without a chat model and a judge, compare-chunking calls no model")
        return plan
    handed = _filler(budget_chars)
    for q in golden.questions:
        prompt = message_tokens([{"role": "user", "content": f"{handed}\n\nQuestion: {q.question}"}])
        answer = count_tokens(q.reference or handed[:200])
        item = AnswerItem(q.id, q.question, (), q.reference, (), q.reference or "", None, (Context(handed),))
        judged = message_tokens(judge_messages(JUDGE_METRICS["correctness"], item))
        for _ in range(n_builds):
            plan.group(chat_model.model_id, "answers").add(prompt, answer, cached=False, exact=False)
            plan.group(judge.model_id, "judge").add(judged, count_tokens(JUDGE_REPLY), cached=False, exact=False)
    plan.notes.append(f"{n_builds} builds (techniques x sizes) x {len(golden.questions)} questions; handed text "
                      f"taken as the whole budget of {budget_chars} characters")
    return plan
