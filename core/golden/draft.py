"""Drafted questions: a writer and a critic chat model write golden rows from the documents.

``ragtune draft --docs DIR -o FILE [--n 50] [--seed 0] [--kinds ...] [--examples FILE]`` works
with any OpenAI-compatible chat model, in the steps of DeepEval's synthesizer and VectrixDB's
``write_golden``:

1. Passages: the documents' sections, each cut at page breaks
   (:func:`core.golden.passages.section_passages`: a section starts at each heading the
   chunkers see, or in a PDF without labelled headings at each heading-like paragraph),
   near-empty ones left out, documents sorted by id. ``n * PASSAGE_OVERSAMPLE`` of them are
   taken spread across the sections (:func:`core.golden.passages.spread_across_sections`:
   every section's first passage before any section's second, evenly through the corpus
   from a start the seed picks) and visited in strides, so the first ``n`` visited already
   span the corpus and later ones fill in for passages passed over.
2. The critic scores each passage (0 to 1) for whether a self-contained question can be asked
   of it and answered from it; passages under ``passage_min_score`` are passed over.
3. The writer writes one question of the kind written least so far (ties: the order of
   ``kinds``): ``factual`` (one passage), ``multi-hop`` (needs two passages of one document:
   the passage and the nearest passage on another of its pages, else its nearest other
   section), ``comparison`` (two passages: the second is chosen on merit, the passage of
   another document (of the same one when the corpus has one) whose embedding is closest to
   the first's (cosine; ties: corpus order), among the passages fit to pair: no cover, table
   of contents or boilerplate, see :func:`core.golden.passages.second_passage_reason`),
   ``unanswerable`` (on the passage's subject, not answered by it). It replies with JSON
   ``{"question", "reference", "evidence": [quotes]}``.
4. Checks, each turning the question down with a reason the writer is told when it is asked
   again (up to ``tries`` replies per passage; then the passage is set aside with the reason):
   the reply is a JSON object with a question and a reference; every evidence quote (at least
   :data:`~core.golden.types.MIN_EVIDENCE_WORDS` words; none for ``unanswerable``) is found
   verbatim on one of the passages' pages (after ``normalize_text``); the question does not
   copy the passage (a run of text of ``copy_share`` of the question's normalised length found
   in a passage); the question is not too close to an earlier one (embedding cosine above
   ``duplicate_cosine``); the critic grades the question and the answer (0 to 1 each) at least
   ``grade_min_score``.
5. Every row is ``"draft": true``, with the pages holding its quotes as ``expected``, a hint
   saying where the answer is, and the kind, the run and the grades under ``metadata``. An
   ``unanswerable`` row has no ``expected`` (no page answers it): the passage it was written
   near is under ``metadata.written_near``, and :func:`draft_to_file` writes it to a file of
   its own, ``<output>.unanswerable.jsonl``, which ``ragtune cutoff --unanswerable`` reads
   (once a person has checked that no document answers it and removed ``draft``), so removing
   ``draft`` never turns it into an answerable row labelled with that page.

Every model reply is appended to a reply cache file as it comes (:class:`ReplyCache`), keyed
by the model and the request, so a stopped run resumes where it stopped and a rerun costs
nothing; the same seed, documents and replies give the same rows. A reply that refuses, an
empty reply, or a model that stops answering (the client's retries spent) ends the run at once
with :class:`DraftStopped`, after the rows written so far.

References:
    DeepEval synthesizer (context selection, critic filtering, evolutions):
    https://deepeval.com/docs/synthesizer-introduction ; VectrixDB ``write_golden``:
    https://pypi.org/project/vectrixdb/
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import re
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from core.documents import corpus_fingerprint
from core.errors import ConfigError, GenerationError
from core.evaluation.dry_run import _filler
from core.golden.passages import (Unit, boilerplate_keys, corpus_units, second_passage_reason, section_passages,
                                  spread_across_sections)
from core.golden.reader import read_golden
from core.golden.types import MIN_EVIDENCE_WORDS
from core.metrics.retrieval import has_common_run, normalize_text
from core.models.chat import EmptyReplyError
from core.models.costs import CostPlan, count_tokens, message_tokens
from core.text import plural

if TYPE_CHECKING:
    from core.documents.base import LoadedDocument
    from core.models.chat import ChatModel
    from core.models.embeddings import EmbeddingModel

logger = logging.getLogger(__name__)

#: The kinds of question the writer can be asked for, in their default order.
KINDS: tuple[str, ...] = ("factual", "multi-hop", "comparison", "unanswerable")
#: Passages considered per row wanted (the critic and the checks pass some over).
PASSAGE_OVERSAMPLE = 3
#: Characters of a passage shown to the models (its start).
PASSAGE_MAX_CHARS = 3000
#: Example questions (``--examples``) shown to the writer.
EXAMPLES_SHOWN = 5
#: Passages set aside listed in a summary's text.
SET_ASIDE_SHOWN = 5
#: Id prefix of drafted rows (``draft-001``).
DRAFT_ID_PREFIX = "draft-"
#: The reference answer of an ``unanswerable`` question when the writer gives none.
UNANSWERABLE_REFERENCE = "The documents do not answer this question."

_REFUSAL = re.compile(
    r"^\W*(?:i'?m sorry|i am sorry|sorry[,.!]|i (?:can ?not|can't|won't|will not|am unable|'m unable)|"
    r"as an ai\b|i must decline)", re.IGNORECASE)

_KIND_TEXT = {
    "factual": "a factual question answered by one fact stated in passage P1",
    "multi-hop": "a multi-hop question that can only be answered by combining a fact from P1 with a fact from P2 "
                 "(both are from the same document)",
    "comparison": "a comparison question that compares something described in P1 with something described in P2",
    "unanswerable": "a question on the subject of P1 that P1 does NOT answer (a user might ask it, but the "
                    "documents do not say); the reference says that the documents do not answer it; give no evidence",
}
_NEEDS_TWO = ("multi-hop", "comparison")


@dataclass(frozen=True)
class DraftOptions:
    """Settings of a drafting run.

    Attributes:
        n: rows wanted (>= 1).
        seed: picks where the spread of passages starts.
        kinds: the kinds of question to write, from :data:`KINDS` (distinct).
        tries: writer replies per passage before it is set aside (>= 1).
        passage_min_score: the critic's passage score (0 to 1) below which a passage is passed over.
        grade_min_score: the critic's grade (0 to 1) of the question and of the answer below which
            a question is turned down.
        duplicate_cosine: a question whose embedding cosine with an earlier question exceeds this
            (in [-1, 1]) is turned down as too close.
        copy_share: a question is turned down as copying the passage when a run of at least this
            share (0 to 1) of its normalised characters appears in a passage.
        examples: example questions shown to the writer (at most :data:`EXAMPLES_SHOWN` used).
        max_unusable: the run stops after this many replies in a row that are not in the reply
            format (no JSON object, or one without the fields asked for), with an example of
            the reply expected: a model that ignores the format spends no more calls (>= 1).

    Raises:
        ConfigError: a value out of range or an unknown kind.
    """

    n: int = 50
    seed: int = 0
    kinds: tuple[str, ...] = KINDS
    tries: int = 3
    passage_min_score: float = 0.5
    grade_min_score: float = 0.5
    duplicate_cosine: float = 0.9
    copy_share: float = 0.7
    examples: tuple[str, ...] = ()
    max_unusable: int = 8

    def __post_init__(self) -> None:
        for name in ("n", "tries", "max_unusable"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"{name} must be an integer of at least 1, got {value!r}")
        unknown = [k for k in self.kinds if k not in KINDS]
        if unknown or not self.kinds or len(set(self.kinds)) != len(self.kinds):
            raise ConfigError(f"kinds must be distinct names from {', '.join(KINDS)}, got {', '.join(self.kinds) or 'none'}")
        for name in ("passage_min_score", "grade_min_score", "copy_share"):
            if not 0.0 <= float(getattr(self, name)) <= 1.0:
                raise ConfigError(f"{name} must be between 0 and 1, got {getattr(self, name)}")
        if not -1.0 <= float(self.duplicate_cosine) <= 1.0:
            raise ConfigError(f"duplicate_cosine must be between -1 and 1, got {self.duplicate_cosine}")


class DraftStopped(GenerationError):
    """A model refused, stopped answering or kept ignoring the reply format: the run ended,
    keeping the rows written.

    Attributes:
        summary: the run's :class:`DraftSummary` up to the stop.
    """

    def __init__(self, message: str, summary: "DraftSummary") -> None:
        super().__init__(message)
        self.summary = summary


class DraftInterrupted(KeyboardInterrupt):
    """The run was interrupted (Ctrl-C, SIGINT): the rows written and the replies cached are
    kept, and the same run resumes from them.

    Attributes:
        summary: the run's :class:`DraftSummary` up to the interruption.
    """

    def __init__(self, summary: "DraftSummary") -> None:
        super().__init__("interrupted")
        self.summary = summary


@dataclass
class DraftSummary:
    """What a drafting run wrote and passed over.

    Attributes:
        written: kind -> rows written.
        passed_over: reason -> passages passed over or set aside for it.
        set_aside: ``{"passage", "kind", "reason", "question"}`` per passage set aside after its
            tries, in order (at most ``n * PASSAGE_OVERSAMPLE``).
        n_replies: model replies used; n_cached: of them, from the reply cache.
        n_unusable: replies not in the reply format (no JSON object, or without its fields).
        n_wanted: rows asked for.
        n_candidates: passages the run could visit (``n * PASSAGE_OVERSAMPLE`` at most).
        n_visited: of them, visited.
        stopped: why the run ended early, or None.
        format_advice: when the last replies of a role were not in the reply format, what was
            wrong and an example of the reply expected (said if the run ends short), else None.
    """

    written: Counter = field(default_factory=Counter)
    passed_over: Counter = field(default_factory=Counter)
    set_aside: list[dict[str, Any]] = field(default_factory=list)
    n_replies: int = 0
    n_cached: int = 0
    n_unusable: int = 0
    n_wanted: int = 0
    n_candidates: int = 0
    n_visited: int = 0
    stopped: str | None = None
    format_advice: str | None = None

    @property
    def n_written(self) -> int:
        """Rows written."""
        return sum(self.written.values())

    def why_short(self) -> str | None:
        """Why fewer rows than asked were written, in words, or None when none are missing."""
        if self.n_written >= self.n_wanted:
            return None
        missing = f"{self.n_wanted - self.n_written} of the {self.n_wanted} rows asked for are missing"
        if self.stopped:
            return f"{missing}: the run stopped ({self.stopped})"
        why = ", ".join(f"{v} {k}" for k, v in sorted(self.passed_over.items(), key=lambda kv: (-kv[1], kv[0])))
        visited = (f"{missing}: every one of the {self.n_candidates} passages the run takes ({PASSAGE_OVERSAMPLE} per "
                   f"row asked, spread across the sections) was visited, and {self.n_visited - self.n_written} gave no "
                   "row" + (f" ({why})" if why else ""))
        if self.format_advice:  # the model ignores the reply format: no bar or corpus would help
            return f"{visited}; {self.format_advice}"
        return visited + "; lower the critic's bar, add documents, or ask for fewer rows"

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable counts."""
        return {"n_written": self.n_written, "n_wanted": self.n_wanted, "written": dict(self.written),
                "passed_over": dict(self.passed_over), "set_aside": list(self.set_aside),
                "n_replies": self.n_replies, "n_cached": self.n_cached, "n_unusable": self.n_unusable,
                "n_candidates": self.n_candidates, "n_visited": self.n_visited, "stopped": self.stopped,
                "why_short": self.why_short()}

    def format(self) -> str:
        """The summary as lines a person reads."""
        by_kind = ", ".join(f"{v} {k}" for k, v in self.written.items() if v) or "none"
        asked = f" of {self.n_wanted} asked" if self.n_written < self.n_wanted else ""
        lines = [f"wrote {plural(self.n_written, 'draft question')}{asked} ({by_kind})"]
        if self.passed_over:
            lines.append("passed over: " + ", ".join(f"{v} {k}" for k, v in sorted(self.passed_over.items())))
        for item in self.set_aside[:SET_ASIDE_SHOWN]:
            lines.append(f"  set aside {item['passage']} ({item['kind']}): {item['reason']}")
        if len(self.set_aside) > SET_ASIDE_SHOWN:
            lines.append(f"  ... and {len(self.set_aside) - SET_ASIDE_SHOWN} more set aside")
        replies = "model reply" if self.n_replies == 1 else "model replies"
        unusable = f", {self.n_unusable} not in the reply format" if self.n_unusable else ""
        lines.append(f"{self.n_replies} {replies} used, {self.n_cached} from the cache{unusable}")
        short = self.why_short()
        if short:
            lines.append(f"fewer rows than asked: {short}")
        elif self.stopped:
            lines.append(f"stopped: {self.stopped}")
        return "\n".join(lines)


class ReplyCache:
    """Model replies kept in a JSON Lines file, appended (and flushed to disk) as they come.

    Each line is ``{"key", "model", "reply"}``; ``key`` is :func:`request_key`. A line cut short
    by a crash is ignored when the file is read again. A reply dropped later (one not in the
    reply format: asked again on the next run) is a line ``{"key", "dropped": true}``.

    Args:
        path: the cache file (created, with its folder, when missing).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._replies: dict[str, str] = {}
        if self.path.exists():
            for line in self.path.read_text(encoding="utf-8").splitlines():
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if not isinstance(item, dict) or not isinstance(item.get("key"), str):
                    continue
                if item.get("dropped") is True:
                    self._replies.pop(item["key"], None)
                elif isinstance(item.get("reply"), str):
                    self._replies[item["key"]] = item["reply"]

    def __len__(self) -> int:
        return len(self._replies)

    def get(self, key: str) -> str | None:
        """The reply cached under ``key``, or None."""
        return self._replies.get(key)

    def put(self, key: str, model_id: str, reply: str) -> None:
        """Append a reply to the file and keep it."""
        self._append({"key": key, "model": model_id, "reply": reply})
        self._replies[key] = reply

    def drop(self, key: str) -> None:
        """Forget the reply under ``key`` (a line saying so is appended): the next run asks again."""
        if key in self._replies:
            self._append({"key": key, "dropped": True})
            del self._replies[key]

    def _append(self, item: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(item, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


def request_key(model_id: str, messages: Sequence[dict[str, str]]) -> str:
    """sha256 hex of the model id and the messages (canonical JSON)."""
    canonical = json.dumps({"model": model_id, "messages": list(messages)}, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def parse_json_reply(reply: str) -> dict[str, Any] | None:
    """The JSON object in a reply (code fences and text around the outermost braces allowed),
    or None when there is none."""
    text = reply.strip()
    for candidate in (text, text[text.find("{"): text.rfind("}") + 1] if "{" in text else ""):
        if not candidate:
            continue
        try:
            value = json.loads(candidate)
        except ValueError:
            continue
        if isinstance(value, dict):
            return value
    return None


def is_refusal(reply: str) -> bool:
    """True when a reply that holds no JSON object starts like a refusal (``I'm sorry``, ``I can't``...)."""
    return parse_json_reply(reply) is None and bool(_REFUSAL.match(reply))


def _score(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value) if 0.0 <= value <= 1.0 else None


#: A reply of each kind, as the models are asked for it (shown when a model ignores the format).
REPLY_EXAMPLES = {
    "score": '{"score": 0.8, "reason": "the passage states the plan\'s dental cover"}',
    "write": '{"question": "What share of routine check-ups does the dental plan pay?", "reference": "Eighty '
             'percent.", "evidence": ["pays eighty percent of routine check-ups"]}',
    "grade": '{"question": 0.9, "answer": 0.8, "reason": "clear, and answered by P1"}',
}


class _Models:
    """The writer and critic behind the reply cache; stops the run on a refusal, a failure, or
    ``max_unusable`` replies in a row of one role (writer, critic) that are not in the reply
    format (a critic that answers well does not hide a writer that never does)."""

    def __init__(self, writer: ChatModel, critic: ChatModel, cache: ReplyCache, summary: DraftSummary, max_unusable: int) -> None:
        self.writer, self.critic, self.cache, self.summary = writer, critic, cache, summary
        self.max_unusable = max_unusable
        self.unusable_in_a_row: Counter = Counter()
        self.last_key: dict[str, str] = {}  # role -> the key of its last reply

    def ask(self, model: ChatModel, role: str, messages: list[dict[str, str]]) -> str:
        key = self.last_key[role] = request_key(model.model_id, messages)
        reply = self.cache.get(key)
        if reply is not None:
            self.summary.n_cached += 1
        else:
            try:
                reply = model.chat(messages)
            except EmptyReplyError as exc:
                self._stop(f"the {role} model {model.model_id} sent an empty reply ({exc})")
            except GenerationError as exc:
                self._stop(f"the {role} model {model.model_id} stopped answering: {exc}")
            self.cache.put(key, model.model_id, reply)
        self.summary.n_replies += 1  # counted once a reply came (from the model or the cache)
        if is_refusal(reply):
            self._stop(f"the {role} model {model.model_id} refused: {' '.join(reply.split())[:200]!r}")
        return reply

    def judged(self, usable: bool, model: ChatModel, role: str, task: str, reply: str) -> None:
        """Count a reply in the reply format or not; stop after ``max_unusable`` unusable in a row
        from ``role``.

        Raises:
            DraftStopped: the last ``max_unusable`` replies were all unusable (the message
                shows the last one and an example of the reply expected).
        """
        if usable:
            self.unusable_in_a_row[role] = 0
            self.summary.format_advice = None
            return
        self.summary.n_unusable += 1
        self.unusable_in_a_row[role] += 1
        if role in self.last_key:  # not kept: a rerun (a fixed endpoint, another prompt) asks again
            self.cache.drop(self.last_key[role])
        shown = " ".join(reply.split())[:200]
        advice = (f"the last, from {model.model_id}: {shown!r}); every reply must be one JSON object, for example "
                  f"{REPLY_EXAMPLES[task]}: use a model that follows the format (an instruction-tuned one, or a "
                  "larger one), or give another with --writer / --critic")
        # said at the end too when the run ends short with the replies still out of format
        n = self.unusable_in_a_row[role]
        said = f"the last {n} {role} replies were" if n > 1 else f"the last {role} reply was"
        self.summary.format_advice = f"{said} not in the reply format ({advice}"
        if n >= self.max_unusable:
            self._stop(f"{n} {role} replies in a row were not in the reply format ({advice}")

    def _stop(self, message: str) -> None:
        self.summary.stopped = message
        raise DraftStopped(message, self.summary)


_SYSTEM = ("You help build a test set for a document search system. Follow the task exactly and reply with one "
           "JSON object only, no other text.")


def _passage_block(label: str, unit: Unit) -> str:
    text = unit.text[:PASSAGE_MAX_CHARS]
    return f"[{label}] from {unit.target}:\n{text}"


def passage_messages(unit: Unit) -> list[dict[str, str]]:
    """The critic's request to score a passage."""
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": (
        "TASK: score the passage. Can a clear, self-contained question be asked of this passage and answered "
        "from it alone? Reply {\"score\": a number from 0 (no) to 1 (yes), \"reason\": \"...\"}.\n\n"
        + _passage_block("P1", unit))}]


def writer_messages(kind: str, units: Sequence[Unit], examples: Sequence[str]) -> list[dict[str, str]]:
    """The writer's first request for a question of ``kind`` on ``units`` (P1, then P2)."""
    parts = [f"TASK: write {_KIND_TEXT[kind]}.",
             "Write the question as a user would ask it, in your own words: do not copy sentences of the passages.",
             "Reply {\"question\": \"...\", \"reference\": \"the answer\", \"evidence\": [\"a quote copied "
             "verbatim from a passage, at least 3 words\", ...]}."]
    if examples:
        parts.append("Questions in the style wanted:\n" + "\n".join(f"- {e}" for e in examples[:EXAMPLES_SHOWN]))
    parts += [_passage_block(f"P{i}", u) for i, u in enumerate(units, start=1)]
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def grade_messages(question: str, reference: str, units: Sequence[Unit]) -> list[dict[str, str]]:
    """The critic's request to grade a question and its answer."""
    body = "\n\n".join([
        "TASK: grade the question and the answer. Is the question clear and self-contained? Is the answer "
        "correct and complete given the passages? Reply {\"question\": a number from 0 to 1, \"answer\": a "
        "number from 0 to 1, \"reason\": \"...\"}.",
        f"Question: {question}", f"Answer: {reference}",
        *[_passage_block(f"P{i}", u) for i, u in enumerate(units, start=1)]])
    return [{"role": "system", "content": _SYSTEM}, {"role": "user", "content": body}]


class _Pairing:
    """The other passage of a two-passage kind (step 3 of the module's docstring).

    Args:
        units: every passage in corpus order.
        embedding_model: the ``EmbeddingModel`` whose cosine ranks a comparison's candidates
            (embedded once, on the first comparison).
        n_pages: document id -> its page count.
    """

    def __init__(self, units: Sequence[Unit], embedding_model: EmbeddingModel, n_pages: dict[str, int]) -> None:
        shared = boilerplate_keys(units)
        self.units = list(units)
        self.fit = [u for u in units if second_passage_reason(u, n_pages.get(u.document_id, 0), shared) is None]
        self.embedding_model = embedding_model
        self._vectors: dict[int, np.ndarray] = {}

    def second(self, unit: Unit, kind: str) -> Unit | None:
        """The second passage for a question of ``kind`` on ``unit``, or None when there is none."""
        if kind == "multi-hop":
            return self._nearest_in_document(unit)
        others = [u for u in self.fit if u.document_id != unit.document_id] or [
            u for u in self.fit if u.document_id == unit.document_id and u is not unit]
        if not others:
            return None
        self._embed([unit, *others])
        first = self._vectors[id(unit)]
        scores = np.array([float(self._vectors[id(u)] @ first) for u in others])
        return others[int(np.argmax(scores))]  # the first of equals, in corpus order

    def _nearest_in_document(self, unit: Unit) -> Unit | None:
        position = next(i for i, u in enumerate(self.units) if u is unit)
        same = [(i, u) for i, u in enumerate(self.units) if u.document_id == unit.document_id and u is not unit]
        other_pages = [(i, u) for i, u in same if u.target != unit.target]
        nearest = min(other_pages or same, key=lambda iu: (abs(iu[0] - position), iu[0] < position), default=None)
        return None if nearest is None else nearest[1]

    def _embed(self, units: Sequence[Unit]) -> None:
        missing = [u for u in dict.fromkeys(units) if id(u) not in self._vectors]
        if not missing:
            return
        vectors = np.asarray(self.embedding_model.embed_documents([u.text[:PASSAGE_MAX_CHARS] for u in missing]),
                             dtype=np.float32)
        vectors /= np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
        for u, v in zip(missing, vectors):
            self._vectors[id(u)] = v


def visiting_order(n_candidates: int, n: int) -> list[int]:
    """Candidate positions in strides of ``ceil(n_candidates / n)``: 0, s, 2s, ..., 1, 1+s, ..."""
    stride = max(1, math.ceil(n_candidates / max(1, n)))
    return [i for offset in range(stride) for i in range(offset, n_candidates, stride)]


def run_key(documents: Sequence[LoadedDocument], options: DraftOptions, writer_id: str, critic_id: str) -> str:
    """16 hex digits naming a run by its corpus, options (but ``max_unusable``, which decides
    only when a run stops) and models (rows carry it, so a stopped run's file is recognised when
    the run resumes)."""
    kept = {k: v for k, v in asdict(options).items() if k != "max_unusable"}  # a stop rule, not what is written
    canonical = json.dumps({"corpus": corpus_fingerprint(list(documents)), "options": kept,
                            "writer": writer_id, "critic": critic_id}, sort_keys=True)
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def draft_questions(
    documents: Sequence[LoadedDocument],
    *,
    writer: ChatModel,
    embedding_model: EmbeddingModel,
    cache: ReplyCache,
    critic: ChatModel | None = None,
    options: DraftOptions | None = None,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> DraftSummary:
    """Draft golden rows from documents with a writer and a critic chat model.

    Args:
        documents: ``core.documents.LoadedDocument`` objects.
        writer: the ``ChatModel`` writing questions.
        embedding_model: the ``EmbeddingModel`` comparing questions (duplicates) and passages
            (a comparison's second passage).
        cache: the reply cache (read first, appended to).
        critic: the ``ChatModel`` scoring passages and grading questions (default the writer).
        options: the run's settings.
        on_row: called with each row as it is accepted (in order), to write it at once.

    Returns:
        The :class:`DraftSummary` (``why_short()`` says why fewer rows than asked came).

    Raises:
        DraftStopped: a model refused, sent an empty reply, stopped answering, or sent
            ``options.max_unusable`` replies in a row that are not in the reply format; the
            rows accepted before were passed to ``on_row`` and ``.summary`` counts them.
        DraftInterrupted: the run was interrupted (SIGINT); the same holds.
        ConfigError: no passage to draft from.
    """
    options = options or DraftOptions()
    critic = critic or writer
    ordered = sorted(documents, key=lambda d: d.document_id)
    passages = [p for d in ordered for p in section_passages(d) if not p.unit.near_empty]
    if not passages:
        raise ConfigError("no passage to draft from: every page, section or document is near empty")
    candidates = [p.unit for p in spread_across_sections(passages, options.n * PASSAGE_OVERSAMPLE, options.seed)]
    run = _Run(ordered, [p.unit for p in passages], writer=writer, critic=critic, embedding_model=embedding_model,
               cache=cache, options=options, on_row=on_row)
    run.summary.n_candidates = len(candidates)
    try:
        for position in visiting_order(len(candidates), options.n):
            if run.summary.n_written >= options.n:
                break
            run.summary.n_visited += 1
            run.visit(candidates[position])
    except KeyboardInterrupt:
        run.summary.stopped = "interrupted"
        raise DraftInterrupted(run.summary) from None
    return run.summary


class _Run:
    """One drafting run's state: the models, the checks, the pairing and the rows so far."""

    def __init__(self, ordered: Sequence[LoadedDocument], units: Sequence[Unit], *, writer: ChatModel,
                 critic: ChatModel, embedding_model: EmbeddingModel, cache: ReplyCache, options: DraftOptions,
                 on_row: Callable[[dict[str, Any]], None] | None) -> None:
        self.options, self.writer, self.critic, self.on_row = options, writer, critic, on_row
        self.summary = DraftSummary(n_wanted=options.n)
        self.summary.written.update({k: 0 for k in options.kinds})
        self.models = _Models(writer, critic, cache, self.summary, options.max_unusable)
        self.pairing = _Pairing(units, embedding_model, {d.document_id: d.n_pages for d in ordered})
        self.key = run_key(ordered, options, writer.model_id, critic.model_id)
        # quotes are checked on the whole page (or document) a passage lies on
        self.normalized = {u.target: normalize_text(u.text) for u in corpus_units(ordered, by="page")}
        self.accepted: list[np.ndarray] = []
        self.reviewer = _Reviewer(options, self.normalized, self.accepted, embedding_model, self.models, critic)

    def pass_over(self, reason: str) -> None:
        self.summary.passed_over[reason] += 1

    def visit(self, unit: Unit) -> None:
        """Score one passage and, when it is strong enough, ask for a question on it (steps 2-5)."""
        options, summary = self.options, self.summary
        text = self.models.ask(self.critic, "critic", passage_messages(unit))
        passage_score = _score((parse_json_reply(text) or {}).get("score"))
        self.models.judged(passage_score is not None, self.critic, "critic", "score", text)
        if passage_score is None:
            return self.pass_over("passage score unreadable")
        if passage_score < options.passage_min_score:
            return self.pass_over("weak passage")
        kind = min(options.kinds, key=lambda k: (summary.written[k], options.kinds.index(k)))
        used = [unit]
        if kind in _NEEDS_TWO:
            second = self.pairing.second(unit, kind)
            if second is None:
                return self.pass_over(f"no second passage for {kind}")
            used.append(second)
        messages = writer_messages(kind, used, options.examples)
        reason, row, vector = "", None, None
        for _ in range(options.tries):
            text = self.models.ask(self.writer, "writer", messages)
            reason, row, vector = self.reviewer.review(text, kind, used)
            if not reason:
                break
            messages = messages + [{"role": "assistant", "content": text},
                                   {"role": "user", "content": f"Turned down: {reason}. Write it again."}]
        if reason:
            self.pass_over(reason.split(":")[0])
            question = row.get("question") if isinstance(row, dict) else None
            summary.set_aside.append({"passage": unit.target, "kind": kind, "reason": reason, "question": question})
            return None
        self.accepted.append(vector)
        summary.written[kind] += 1
        out = _row(summary.n_written, kind, row, used, self.normalized, self.key)
        if self.on_row is not None:
            self.on_row(out)
        return None


class _Reviewer:
    """The checks of a writer's reply (step 4 of the module's docstring)."""

    def __init__(self, options: DraftOptions, normalized: dict[str, str], accepted: list[np.ndarray],
                 embedding_model: EmbeddingModel, models: _Models, critic: ChatModel) -> None:
        self.options, self.normalized, self.accepted = options, normalized, accepted
        self.embedding_model, self.models, self.critic = embedding_model, models, critic

    def review(self, text: str, kind: str, used: Sequence[Unit]) -> tuple[str, dict[str, Any] | None, Any]:
        """``(reason, row, vector)``: why the reply is turned down ("" when accepted), the reply's
        object (None when it holds none) and the question's unit embedding (when accepted)."""
        row = parse_json_reply(text)
        question = row.get("question") if row is not None else None
        usable = isinstance(question, str) and bool(question.strip())
        self.models.judged(usable, self.models.writer, "writer", "write", text)
        if row is None:
            return "not a JSON object", None, None
        reference, evidence = row.get("reference"), row.get("evidence", [])
        if not usable:
            return "no question", row, None
        if kind == "unanswerable" and (not isinstance(reference, str) or not reference.strip()):
            row["reference"] = reference = UNANSWERABLE_REFERENCE
        if not isinstance(reference, str) or not reference.strip():
            return "no reference answer", row, None
        if not isinstance(evidence, list) or not all(isinstance(q, str) for q in evidence):
            return "evidence is not a list of quotes", row, None
        if kind != "unanswerable":
            if not evidence:
                return "no evidence quote", row, None
            short = [q for q in evidence if len(q.split()) < MIN_EVIDENCE_WORDS]
            if short:
                return f"quote under {MIN_EVIDENCE_WORDS} words: {json.dumps(short[0], ensure_ascii=False)}", row, None
            for quote in evidence:
                if not any(normalize_text(quote) in self.normalized[u.target] for u in used):
                    where = " or ".join(u.target for u in used)
                    return (f"quote not on the page: {json.dumps(quote, ensure_ascii=False)} is not on {where}",
                            row, None)
        q_norm = normalize_text(question)
        need = max(1, math.ceil(self.options.copy_share * len(q_norm)))
        if any(has_common_run(q_norm, self.normalized[u.target], need) for u in used):
            return "copies the passage: write the question in your own words", row, None
        vector = np.asarray(self.embedding_model.embed_documents([question])[0], dtype=np.float32)
        vector = vector / (np.linalg.norm(vector) or 1.0)
        if self.accepted:
            cosine = float(np.max(np.stack(self.accepted) @ vector))
            if cosine > self.options.duplicate_cosine:
                return f"too close to an earlier question: cosine {cosine:.2f}; ask something else", row, None
        reply = self.models.ask(self.critic, "critic", grade_messages(question, reference, used))
        grade = parse_json_reply(reply) or {}
        q_grade, a_grade = _score(grade.get("question")), _score(grade.get("answer"))
        self.models.judged(q_grade is not None and a_grade is not None, self.critic, "critic", "grade", reply)
        if q_grade is None or a_grade is None:
            return "grade unreadable", row, None
        if min(q_grade, a_grade) < self.options.grade_min_score:
            why = grade.get("reason") if isinstance(grade.get("reason"), str) else ""
            return (f"graded weak: question {q_grade:.2f}, answer {a_grade:.2f}{'; ' + why if why else ''}",
                    row, None)
        row["_grades"] = {"question": q_grade, "answer": a_grade}
        return "", row, vector


def _row(number: int, kind: str, reply: dict[str, Any], used: Sequence[Unit], normalized: dict[str, str],
         key: str) -> dict[str, Any]:
    """The golden row of an accepted reply (step 5 of the module's docstring)."""
    evidence = list(reply.get("evidence") or []) if kind != "unanswerable" else []
    holding = [u for u in used if any(normalize_text(q) in normalized[u.target] for q in evidence)] or list(used[:1])
    where = "; ".join(_where(u) for u in holding)
    targets = list(dict.fromkeys(u.target for u in holding))
    metadata: dict[str, Any] = {"kind": kind, "draft_run": key, "grades": reply.get("_grades", {})}
    row: dict[str, Any] = {"id": f"{DRAFT_ID_PREFIX}{number:03d}", "question": reply["question"].strip()}
    if kind == "unanswerable":  # no page answers it: never an 'expected', which would make it answerable
        metadata["written_near"] = targets
        row.update({"reference": reply["reference"].strip(),
                    "hint": f"written near {where}; check that no document answers it, then remove 'draft'"})
    else:
        row.update({"expected": targets, "reference": reply["reference"].strip()})
        if evidence:
            row["evidence"] = evidence
        row["hint"] = f"the answer is on {where}; check it, then remove 'draft'"
    row.update({"draft": True, "metadata": metadata})
    return row


def _where(unit: Unit) -> str:
    where = unit.document_id if unit.page is None else f"page {unit.page} of {unit.document_id}"
    if unit.printed_page is not None and unit.printed_page != str(unit.page):
        where += f" (printed {unit.printed_page})"
    if unit.heading:
        where += f", under {json.dumps(unit.heading, ensure_ascii=False)}"
    return where


def read_examples(path: str | os.PathLike[str]) -> tuple[str, ...]:
    """The questions of a golden file (read as by ``read_golden``), to show the writer as examples.

    Raises:
        GoldenError: the file cannot be read or has errors.
    """
    return tuple(q.question for q in read_golden(path).questions)[:EXAMPLES_SHOWN]


#: The reply cache beside an output file: ``<output>.replies.jsonl``.
CACHE_SUFFIX = ".replies.jsonl"
#: The unanswerable questions beside an output file: ``golden.jsonl`` -> ``golden.unanswerable.jsonl``.
UNANSWERABLE_SUFFIX = ".unanswerable.jsonl"


def unanswerable_path(output: str | os.PathLike[str]) -> Path:
    """Where :func:`draft_to_file` writes unanswerable questions by default: the output's name
    without ``.jsonl``, then :data:`UNANSWERABLE_SUFFIX`, in the same folder."""
    target = Path(output)
    return target.with_name(target.name.removesuffix(".jsonl") + UNANSWERABLE_SUFFIX)


def draft_to_file(
    documents: Sequence[LoadedDocument],
    output: str | os.PathLike[str],
    *,
    writer: ChatModel,
    embedding_model: EmbeddingModel,
    critic: ChatModel | None = None,
    options: DraftOptions | None = None,
    cache_path: str | os.PathLike[str] | None = None,
    unanswerable_output: str | os.PathLike[str] | None = None,
    on_row: Callable[[dict[str, Any], Path], None] | None = None,
) -> DraftSummary:
    """Run :func:`draft_questions` and append each row to its file as it is accepted:
    ``unanswerable`` rows to ``unanswerable_output``, the others to ``output``.

    A file that exists is never overwritten: it is continued only when every row in it comes
    from the same run (same corpus, options and models: ``metadata.draft_run``), which is how a
    stopped or interrupted run resumes; the rows it holds are regenerated from the reply cache
    and not written twice. A last line cut short (the process killed while writing it) is
    dropped, as the reply cache drops one.

    Args:
        documents: the corpus (``LoadedDocument`` objects).
        output: the golden file to write.
        writer, embedding_model, critic, options: as for :func:`draft_questions`.
        cache_path: the reply cache (default ``<output>.replies.jsonl``).
        unanswerable_output: the file of unanswerable questions, in the format ``ragtune cutoff
            --unanswerable`` reads (default :func:`unanswerable_path`).
        on_row: called with each row written and its file (progress).

    Returns:
        The :class:`DraftSummary`.

    Raises:
        ConfigError: a file exists and is not a stopped run of the same settings, or is a folder.
        DraftStopped / DraftInterrupted: as :func:`draft_questions` (the rows before are in
            their files).
    """
    target = Path(output)
    side = Path(unanswerable_output) if unanswerable_output is not None else unanswerable_path(target)
    for path in (target, side):
        if path.is_dir():
            raise ConfigError(f"{path} is a folder: give a file name to write")
    options = options or DraftOptions()
    critic = critic or writer
    key = run_key(sorted(documents, key=lambda d: d.document_id), options, writer.model_id, critic.model_id)
    done = _rows_of_run(target, key) | _rows_of_run(side, key)
    cache = ReplyCache(cache_path or target.with_name(target.name + CACHE_SUFFIX))

    def write(row: dict[str, Any]) -> None:
        if row["id"] in done:
            return
        path = side if row["metadata"]["kind"] == "unanswerable" else target
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        if on_row is not None:
            on_row(row, path)

    return draft_questions(documents, writer=writer, critic=critic, embedding_model=embedding_model, cache=cache,
                           options=options, on_row=write)


def _rows_of_run(path: Path, key: str) -> set[str]:
    """The ids of the rows in ``path`` (none when it does not exist), all of run ``key``; a last
    line cut short is dropped from the file.

    Raises:
        ConfigError: a row of another run, or not a row.
    """
    if not path.exists():
        return set()
    lines = path.read_text(encoding="utf-8").split("\n")
    if lines and lines[-1].strip() and parse_json_reply(lines[-1]) is None:  # cut short: no newline, no object
        logger.warning("%s: dropping its last line, cut short: %r", path, lines[-1][:80])
        lines[-1] = ""
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text("\n".join(lines), encoding="utf-8")
        os.replace(tmp, path)
    done = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        row = parse_json_reply(line)
        run = ((row or {}).get("metadata") or {}).get("draft_run") if isinstance(row, dict) else None
        if run != key:
            raise ConfigError(f"{path} exists already and line {number} is not from a stopped draft run with "
                              "these documents, options and models: it is never overwritten; choose another name")
        done.add(str(row.get("id")))
    return done


def plan_draft(*, writer: ChatModel, critic: ChatModel | None, n: int, tries: int, n_cached: int) -> CostPlan:
    """The plan of ``ragtune draft``: per row the critic scores a passage, the writer writes
    (up to ``tries`` times) and the critic grades each try; passages passed over add more. The
    counts are from the fewest (every first try kept) to the most (every try used);
    ``n_cached`` replies the run's reply file already holds are not asked again."""
    plan = CostPlan()
    unit = Unit("document.pdf", 1, (_filler(PASSAGE_MAX_CHARS // 2),))  # target document.pdf#page=1
    critic = critic or writer
    reply = count_tokens('{"question": "a question of about twenty words", "reference": "an answer", '
                         '"evidence": ["a quote of some words"]}')
    shapes = [(critic, "critic", message_tokens(passage_messages(unit)), 1),
              (writer, "writer", message_tokens(writer_messages("factual", [unit], ())), tries),
              (critic, "critic", message_tokens(grade_messages("a question", "an answer", [unit])), tries)]
    for model, purpose, prompt, per_row in shapes:
        group = plan.group(model.model_id, purpose)
        for _ in range(n * per_row):
            group.add(prompt, reply, cached=False, exact=False)
    plan.notes.append(f"at most: {tries} tries per row for {n} rows (at least {3 * n} calls when every first try "
                      f"is kept); passages are about {PASSAGE_MAX_CHARS // 2} characters")
    if n_cached:
        plan.notes.append(f"the reply file already holds {n_cached} replies: a resumed run asks none of them again")
    return plan
