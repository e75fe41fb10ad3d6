"""Answer metrics from an LLM judge: the metrics' prompts, reading the judge's replies, the evaluator.

References:
    Amazon Bedrock RAG evaluation metrics:
    https://docs.aws.amazon.com/bedrock/latest/userguide/knowledge-base-evaluation-metrics.html ;
    Zheng et al. (2023), "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena".
"""

from __future__ import annotations

import logging
import math
import re
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from core.errors import ConfigError
from core.metrics.answer_scores import (
    AnswerItem,
    MetricScores,
    QuestionScore,
    excerpt,
    missing_answer,
    passages_of,
)
from core.metrics.scales import JUDGE_SCALES
from core.models.breaker import CircuitBreaker
from core.models.chat import EmptyReplyError
from core.models.spend import carry_spend

if TYPE_CHECKING:
    from core.models.chat import ChatModel

logger = logging.getLogger(__name__)

@dataclass(frozen=True)
class JudgeMetric:
    """How one judge metric asks and what scale it expects.

    Attributes:
        name: the short name (``"correctness"``).
        low: lowest score on the judge's scale.
        high: highest score on the judge's scale.
        integer: True when only whole numbers are valid (a 1-5 rating).
        instructions: what the judge is asked, including the scale's anchors.
        uses: the parts of a question shown to the judge, from ``history``, ``question``,
            ``passages``, ``reference``, ``reference_or_passages``, ``answer``.
    """

    name: str
    low: float
    high: float
    integer: bool
    instructions: str
    uses: tuple[str, ...]

    def normalise(self, value: float) -> float:
        """Map a score on the judge's scale to [0, 1]: ``(value - low) / (high - low)``."""
        return (value - self.low) / (self.high - self.low)


JUDGE_SYSTEM_MESSAGE = (
    "You are a strict and impartial evaluator of answers produced by a question-answering system "
    "that retrieves passages from documents. You follow the scoring instructions exactly and reply "
    "with the score only: no words, no explanation."
)

_ZERO_ONE_REPLY = (
    "Use any value between 0 and 1 for cases in between. Reply with one number between 0 and 1 "
    "(for example 0.75) and nothing else."
)

JUDGE_METRICS: dict[str, JudgeMetric] = {
    "answer_relevance": JudgeMetric(
        *JUDGE_SCALES["answer_relevance"],
        "Rate how relevant the ANSWER is to the QUESTION: does it address what was asked? Judge relevance "
        "only, not whether the answer is true.\n"
        "5 - addresses the question directly and stays on topic throughout.\n"
        "4 - addresses the question, with a little content that was not asked for.\n"
        "3 - partly addresses the question, or is vague.\n"
        "2 - barely addresses the question; mostly about something else.\n"
        "1 - does not address the question, or only says that it cannot answer.\n"
        "Reply with one whole number from 1 to 5 and nothing else.",
        ("history", "question", "answer"),
    ),
    "correctness": JudgeMetric(
        *JUDGE_SCALES["correctness"],
        "Judge whether the ANSWER to the QUESTION is correct. When a REFERENCE ANSWER is given, it is the "
        "ground truth: the answer is correct when it states the same facts (wording may differ). Without "
        "one, judge against the PASSAGES and well-established facts.\n"
        "1 - fully correct: every claim that answers the question is right.\n"
        "0.5 - partly correct: some of it is right, some is wrong.\n"
        "0 - incorrect: it contradicts the ground truth, or gives no answer.\n" + _ZERO_ONE_REPLY,
        ("history", "question", "reference_or_passages", "answer"),
    ),
    "completeness": JudgeMetric(
        *JUDGE_SCALES["completeness"],
        "Judge how completely the ANSWER resolves every part of the QUESTION. When a REFERENCE ANSWER is "
        "given, the answer is complete when it contains all the information of the reference that the "
        "question asks for. Without one, judge against the PASSAGES. Do not penalise extra detail here.\n"
        "1 - every part of the question is answered.\n"
        "0.5 - about half of what was asked is answered.\n"
        "0 - none of it is answered.\n" + _ZERO_ONE_REPLY,
        ("history", "question", "reference_or_passages", "answer"),
    ),
    "faithfulness": JudgeMetric(
        *JUDGE_SCALES["faithfulness"],
        "Judge whether the ANSWER is faithful to the PASSAGES: is every claim in it stated in, or directly "
        "implied by, the passages? Do not use outside knowledge: a true claim that the passages do not "
        "support is unfaithful. An answer that only says the passages do not contain the answer makes no "
        "claim and is faithful. With no passages, any factual claim is unfaithful.\n"
        "1 - every claim is supported by the passages.\n"
        "0.5 - about half of the claims are supported.\n"
        "0 - no claim is supported, or the answer contradicts the passages.\n" + _ZERO_ONE_REPLY,
        ("question", "passages", "answer"),
    ),
    "helpfulness": JudgeMetric(
        *JUDGE_SCALES["helpfulness"],
        "Judge how helpful the ANSWER is to the person who asked the QUESTION (in the conversation, when one "
        "is shown): does it meet their need, follow what they asked for, and read clearly and concisely, "
        "without being evasive, padded or off topic?\n"
        "1 - exactly what the person needed.\n"
        "0.5 - somewhat helpful, with clear shortcomings.\n"
        "0 - not helpful at all.\n" + _ZERO_ONE_REPLY,
        ("history", "question", "answer"),
    ),
}


# ------------------------------------------------------------------------------------ reply parsing


@dataclass(frozen=True)
class ParsedScore:
    """A judge reply read as a score.

    Attributes:
        value: the score on the judge's scale, or None when the reply is invalid.
        reason: why the reply is invalid, else None.
    """

    value: float | None
    reason: str | None = None

    @property
    def valid(self) -> bool:
        """True when the reply held a score on the scale."""
        return self.value is not None


_NUMBER = r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)"
_SCORE_LINE = re.compile(
    rf"^(?:(?:final\s+)?(?:score|rating)\s*(?:[:=]|is)?\s*)?(?P<num>{_NUMBER})"
    rf"\s*(?:/\s*(?P<den>{_NUMBER})|out\s+of\s+(?P<den2>{_NUMBER}))?\s*\.?$",
    re.IGNORECASE,
)
_MARKUP = str.maketrans("", "", "*`")


def parse_score(reply: str | None, low: float, high: float, *, integer: bool = False) -> ParsedScore:
    """Read a judge's reply as a score on the scale ``[low, high]``, strictly.

    Valid replies are a number alone (``"0.8"``, ``".5"``, ``"1."``), optionally labelled
    (``"Score: 1.0"``, ``"Rating = 4"``, ``"score is 3"``), optionally out of the scale's top
    (``"4/5"``, ``"4 out of 5"``), with an optional final period; markdown ``*`` and backticks
    are ignored. When the reply has several lines, only the last non-empty line is read, so a
    judge may reason first and end with the score on a line of its own.

    Invalid (the reason says which): an empty reply; a last line that is not a score in that
    form (text with no score, two numbers, a percentage); a number outside ``[low, high]``; a
    different denominator; a fraction when ``integer`` is set.

    Args:
        reply: the judge's reply (None counts as empty).
        low: lowest valid score.
        high: highest valid score.
        integer: accept whole numbers only (``4`` and ``4.0``, not ``3.5``).

    Returns:
        A :class:`ParsedScore`.
    """
    if reply is None or not reply.strip():
        return ParsedScore(None, "empty reply")
    lines = [line.translate(_MARKUP).strip() for line in reply.strip().splitlines()]
    lines = [line for line in lines if line]
    if not lines:
        return ParsedScore(None, f"no score in the reply {excerpt(reply)!r}")
    match = _SCORE_LINE.match(lines[-1])
    if match is None:
        where = "the reply" if len(lines) == 1 else "the last line of the reply"
        return ParsedScore(None, f"no score in {where} {excerpt(lines[-1])!r} (expected a number alone, such as '0.8')")
    value = float(match.group("num"))
    den = match.group("den") or match.group("den2")
    if den is not None and float(den) != float(high):
        return ParsedScore(None, f"score {match.group('num')}/{den} is not on the scale {low:g} to {high:g}")
    if not math.isfinite(value) or not low <= value <= high:
        return ParsedScore(None, f"score {match.group('num')} is outside the scale {low:g} to {high:g}")
    if integer and not value.is_integer():
        return ParsedScore(None, f"score {match.group('num')} is not a whole number from {low:g} to {high:g}")
    return ParsedScore(value)


#: ``judge.faithfulness`` of an answer with no passage: nothing supports it.
_NO_PASSAGE_FAITHFULNESS = QuestionScore(0.0)


def judge_messages(metric: JudgeMetric, item: AnswerItem) -> list[dict[str, str]]:
    """Return the messages that ask the judge for ``metric`` on ``item``.

    The user message holds the metric's instructions, then the parts the metric uses, each
    under a heading: ``CONVERSATION SO FAR`` (earlier turns, when any), ``QUESTION``,
    ``PASSAGES`` (numbered ``[1]``, ``[2]``, ...; blank passages left out, and
    ``(no passages were retrieved)`` when none is left), ``REFERENCE ANSWER``, ``ANSWER``.
    """
    parts = [metric.instructions, ""]
    uses = set(metric.uses)
    has_reference = bool(item.reference and item.reference.strip())
    if "history" in uses and item.history:
        turns = "\n".join(f"{role}: {content}" for role, content in item.history)
        parts += ["[CONVERSATION SO FAR]", turns, ""]
    parts += ["[QUESTION]", item.question, ""]
    show_passages = "passages" in uses or ("reference_or_passages" in uses and not has_reference)
    if show_passages:
        passages = "\n".join(f"[{i}] {c.text}" for i, c in enumerate(passages_of(item), start=1))
        parts += ["[PASSAGES]", passages or "(no passages were retrieved)", ""]
    if "reference_or_passages" in uses and has_reference:
        parts += ["[REFERENCE ANSWER]", item.reference or "", ""]
    parts += ["[ANSWER]", item.answer or "", "", "Score:"]
    return [{"role": "system", "content": JUDGE_SYSTEM_MESSAGE}, {"role": "user", "content": "\n".join(parts)}]


class JudgeEvaluator:
    """An LLM judge: one chat call per question and metric, replies read by :func:`parse_score`.

    Calls run in a bounded thread pool. A call that fails (after the chat model's retries)
    marks that question *failed* for that metric; a reply without a valid score marks it
    *invalid*, with the reason. Neither is averaged in.

    Args:
        judge: the judge :class:`~core.models.chat.ChatModel` (any OpenAI-compatible endpoint).
        max_workers: judge calls at once (>= 1).
        temperature: sampling temperature for judge calls (0 for repeatable judgements);
            None keeps the judge model's setting.
        max_completion_tokens: reply limit for judge calls; None keeps the judge model's
            setting (reasoning models need room to think).
        max_consecutive_failures: failed calls in a row after which the rest are skipped (and
            counted as lost, ``skipped``); None: never.
        repeats: calls per item and metric (``--judge-repeat``), with the same sampling; 1
            by default.

    Raises:
        ConfigError: ``max_workers`` or ``repeats`` below 1.

    References:
        Amazon Bedrock RAG evaluation metrics:
        https://docs.aws.amazon.com/bedrock/latest/userguide/knowledge-base-evaluation-metrics.html ;
        Zheng et al. (2023), "Judging LLM-as-a-Judge with MT-Bench and Chatbot Arena".
    """

    name = "judge"

    def __init__(
        self,
        judge: ChatModel,
        *,
        max_workers: int = 4,
        temperature: float | None = 0.0,
        max_completion_tokens: int | None = None,
        max_consecutive_failures: int | None = 5,
        repeats: int = 1,
    ) -> None:
        if int(repeats) < 1:
            raise ConfigError(f"repeats (--judge-repeat) must be at least 1, got {repeats}")
        self.repeats = int(repeats)
        if int(max_workers) < 1:
            raise ConfigError(f"max_workers must be at least 1, got {max_workers}")
        if max_consecutive_failures is not None and int(max_consecutive_failures) < 1:
            raise ConfigError(f"max_consecutive_failures must be at least 1, got {max_consecutive_failures}")
        self.max_consecutive_failures = max_consecutive_failures
        self.judge = judge
        self.max_workers = int(max_workers)
        self.temperature = temperature
        self.max_completion_tokens = max_completion_tokens
        self.last_run_s: float = 0.0

    @property
    def model_id(self) -> str:
        """The judge model's id."""
        return str(getattr(self.judge, "model_id", type(self.judge).__name__))

    @property
    def metrics(self) -> tuple[str, ...]:
        """``answer_relevance``, ``correctness``, ``completeness``, ``faithfulness``, ``helpfulness``."""
        return tuple(JUDGE_METRICS)

    def score_one(self, metric: JudgeMetric, item: AnswerItem, sample: int = 0) -> QuestionScore:
        """Ask the judge for one metric on one answered item and read its reply (a failed call
        is a ``failed`` score with the error and why it was lost; it is never raised).

        Args:
            metric: the metric.
            item: the answered item.
            sample: which of the repeated calls this is (0 first); a judge that keeps its
                replies (``CachedChatModel.sampled``) keeps each repeat apart.
        """
        judge = self.judge
        if sample and callable(getattr(judge, "sampled", None)):
            judge = judge.sampled(sample)
        try:
            reply = judge.chat(
                judge_messages(metric, item),
                max_completion_tokens=self.max_completion_tokens, temperature=self.temperature,
            )
        except EmptyReplyError:
            reply = ""  # the judge answered with nothing: an invalid reply, not a failed call
        except Exception as exc:  # GenerationError after retries, or a judge of the caller's own
            return QuestionScore(None, "failed", f"judge call failed: {type(exc).__name__}: {excerpt(str(exc), 200)}",
                                 lost=lost_kind(exc))
        parsed = parse_score(reply, metric.low, metric.high, integer=metric.integer)
        if not parsed.valid:
            return QuestionScore(None, "invalid", parsed.reason, lost="unparseable")
        value = float(parsed.value)  # type: ignore[arg-type]
        return QuestionScore(metric.normalise(value), raw=value if metric.integer else None)

    def evaluate(self, items: Sequence[AnswerItem], metrics: Sequence[str]) -> dict[str, MetricScores]:
        """Score ``items`` with each of ``metrics`` (short names), :attr:`repeats` calls per item
        and metric; an item's score is then the mean of its valid calls (see
        :func:`combine_samples`), and :func:`repeat_spread` says how the calls differed.

        Raises:
            ConfigError: an unknown metric.
        """
        for metric in metrics:
            if metric not in JUDGE_METRICS:
                raise ConfigError(f"unknown judge metric {metric!r}; known: {', '.join(JUDGE_METRICS)}")
        started = time.perf_counter()
        n = self.repeats
        results: dict[str, list[QuestionScore | None]] = {m: [None] * len(items) for m in metrics}
        samples: dict[tuple[str, int], list[QuestionScore | None]] = {}
        jobs = []
        for metric in metrics:
            for i, item in enumerate(items):
                failed = missing_answer(item)
                if failed is not None:
                    results[metric][i] = failed
                elif metric == "faithfulness" and not passages_of(item):
                    results[metric][i] = _NO_PASSAGE_FAITHFULNESS
                else:
                    samples[(metric, i)] = [None] * n
                    jobs.extend((metric, i, r) for r in range(n))

        breaker = CircuitBreaker(self.max_consecutive_failures, f"judge {self.model_id}")

        def run(job: tuple[str, int, int]) -> tuple[str, int, int, QuestionScore]:
            metric, i, r = job
            reason = breaker.blocked()
            if reason is not None:
                return metric, i, r, QuestionScore(None, "failed", reason, lost="skipped")
            score = self.score_one(JUDGE_METRICS[metric], items[i], sample=r)
            breaker.record(score.status != "failed", score.reason or "")
            return metric, i, r, score

        if jobs:
            with ThreadPoolExecutor(max_workers=min(self.max_workers, len(jobs)), thread_name_prefix="ragtune-judge") as pool:
                for metric, i, r, score in pool.map(carry_spend(run), jobs):
                    samples[(metric, i)][r] = score
        lost: dict[str, dict[str, int]] = {m: {} for m in metrics}
        for (metric, i), calls in samples.items():
            for call in calls:
                if call is not None and call.lost:
                    lost[metric][call.lost] = lost[metric].get(call.lost, 0) + 1
            results[metric][i] = combine_samples([c for c in calls if c is not None], JUDGE_METRICS[metric], n)
        self.last_run_s = time.perf_counter() - started
        if breaker.skipped:
            logger.warning("%s: %d judge calls skipped after %d failures in a row", breaker.what, breaker.skipped,
                           self.max_consecutive_failures)
        out = {}
        for m, scores in results.items():
            per_item = {i: calls for (metric, i), calls in samples.items() if metric == m}
            out[m] = MetricScores([s for s in scores if s is not None], lost=lost[m],
                                  repeats=repeat_spread(per_item, n) if n > 1 else None)
        return out


#: Lost judge calls by kind: their names in reports and tables, in this order.
LOST_KINDS: tuple[str, ...] = ("rate_limited", "timed_out", "error", "skipped", "unparseable")


def lost_kind(exc: BaseException) -> str:
    """Why a judge call failed: ``rate_limited`` (HTTP 429 after the retries), ``timed_out``
    (no answer in time), else ``error``; read from the exception and those it was raised from."""
    current: BaseException | None = exc
    for _ in range(10):
        if current is None:
            break
        status = getattr(current, "status_code", None)
        name = getattr(current, "name", "") or type(current).__name__
        if status == 429 or name == "RateLimitError":
            return "rate_limited"
        if isinstance(current, TimeoutError) or "Timeout" in str(name):
            return "timed_out"
        current = current.__cause__ or current.__context__
    return "error"


def combine_samples(calls: Sequence[QuestionScore], metric: JudgeMetric, n: int) -> QuestionScore:
    """One item's score from its ``n`` judge calls: the first call's outcome when ``n`` is 1;
    else the mean of the valid calls' scores (``raw`` their mean too, for a whole-number
    scale), with every call's score in ``samples``; when no call was valid, the first call's
    failure."""
    if n == 1:
        return calls[0]
    valid = [c for c in calls if c.status == "scored" and c.score is not None]
    values = tuple(c.score if c.status == "scored" else None for c in calls)
    if not valid:
        first = calls[0]
        return QuestionScore(None, first.status, first.reason, lost=first.lost, samples=values)
    mean = float(sum(c.score for c in valid) / len(valid))  # type: ignore[misc]
    raw = float(sum(c.raw for c in valid) / len(valid)) if metric.integer and all(  # type: ignore[misc]
        c.raw is not None for c in valid) else None
    return QuestionScore(mean, raw=raw, samples=values)


#: The score at or above which a judged answer passes, for counting changed verdicts.
PASS_SCORE = 0.5


def repeat_spread(per_item: dict[int, list[QuestionScore | None]], n: int) -> dict[str, Any]:
    """How ``n`` judge calls per item differ, over the items with at least two valid calls.

    Returns:
        ``{n, n_items, mean_sd, max_range, n_changed, n_verdict_changed, mean_by_repeat}``:
        ``mean_sd`` is the mean over items of the sample standard deviation (``ddof=1``) of
        their calls' scores (in [0, 1]), ``max_range`` the largest spread of one item's
        scores, ``n_changed`` the items whose calls did not all give the same score,
        ``n_verdict_changed`` those whose calls fell on both sides of :data:`PASS_SCORE`
        (the pick "passes" changed), and ``mean_by_repeat`` the mean score of each call
        number over the items it scored (None when it scored none).
    """
    import statistics

    sds, ranges, changed, flipped = [], [], 0, 0
    by_repeat: list[list[float]] = [[] for _ in range(n)]
    for calls in per_item.values():
        values = [c.score for c in calls if c is not None and c.status == "scored" and c.score is not None]
        for r, c in enumerate(calls):
            if c is not None and c.status == "scored" and c.score is not None:
                by_repeat[r].append(c.score)
        if len(values) < 2:
            continue
        sds.append(statistics.stdev(values))
        ranges.append(max(values) - min(values))
        changed += int(max(values) != min(values))
        flipped += int(min(values) < PASS_SCORE <= max(values))
    return {"n": n, "n_items": len(sds), "mean_sd": float(sum(sds) / len(sds)) if sds else None,
            "max_range": max(ranges) if ranges else None, "n_changed": changed, "n_verdict_changed": flipped,
            "mean_by_repeat": [float(sum(v) / len(v)) if v else None for v in by_repeat]}
