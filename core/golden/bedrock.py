"""Amazon Bedrock RAG-evaluation prompt datasets, read as golden files.

A Bedrock prompt dataset is JSON Lines, one conversation per line (keys in any order)::

    {"conversationTurns": [
        {"prompt": {"content": [{"text": "Who is Spain's main goalkeeper?"}]},
         "referenceResponses": [{"content": [{"text": "Iker Casillas"}]}]},
        {"prompt": {"content": [{"text": "How many caps does he have?"}]},
         "referenceResponses": [{"content": [{"text": "166"}]}]}]}

The bring-your-own-inference (BYOI) variant adds, to every turn, the answer and the passages
of a RAG system run elsewhere::

    "output": {"text": "...", "modelIdentifier": "...", "knowledgeBaseIdentifier": "...",
               "retrievedPassages": {"retrievalResults": [{"name": "...", "content": {"text": "..."}}]},
               "citations": [...]}

Reading rules:

- Each turn becomes one :class:`~core.golden.GoldenQuestion`: the prompt's text blocks joined
  by newlines. Its id is ``line-N`` for a one-turn record and ``line-N-turn-T`` (T from 1)
  otherwise; ``line`` is N.
- A later turn keeps the earlier turns as ``history``: each earlier prompt as a ``user``
  message, then that turn's answer as an ``assistant`` message (its ``output.text`` when given,
  else its first reference response; nothing when it has neither). Its reference is its own.
- The reference is the first ``referenceResponses`` entry (text blocks joined by newlines);
  more than one is a warning, none leaves ``reference`` None (answer correctness cannot score
  it; the judge still can).
- The format names no documents: every question has an empty ``expected``. Retrieval metrics
  count such questions as not scorable; answer metrics score them.
- In a BYOI file every turn needs an ``output`` with non-empty ``text``; passages are
  optional, ``name`` (when given) is read as the passage's document id.
  :func:`core.golden.reader.read_bedrock_answers` returns the answers for scoring without
  generating.
- Text is held to the native format's length limits (:mod:`core.limits`): a prompt to a
  question's (4,000 characters), a reference response, an output's text and a retrieved
  passage's text to a reference's (20,000), a passage's name and an output's identifiers to a
  document id's (4,096); a longer one is an error naming its line and field.
- Problems are reported like the native format's, with their line and a field path such as
  ``conversationTurns[1].prompt.content[0].text``, and bounded the same way.

References:
    Amazon Bedrock, "Creating a prompt dataset for retrieve-and-generate RAG evaluation jobs":
    https://docs.aws.amazon.com/bedrock/latest/userguide/knowledge-base-evaluation-prompt-retrieve-generate.html ;
    retrieve-only: https://docs.aws.amazon.com/bedrock/latest/userguide/knowledge-base-evaluation-prompt-retrieve.html
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from core.text import plural
from core.golden.lines import FIELDS, json_type, nearest, parse_line_object, too_long
from core.golden.problems import ProblemLog
from core.golden.types import GoldenCheck, GoldenQuestion, Problem

#: Format name of a Bedrock prompt dataset.
BEDROCK_FORMAT = "bedrock"
#: Format name of a Bedrock bring-your-own-inference dataset.
BYOI_FORMAT = "bedrock-byoi"
#: Keys of a record.
RECORD_KEYS: tuple[str, ...] = ("conversationTurns",)
#: Keys of a turn.
TURN_KEYS: tuple[str, ...] = ("prompt", "referenceResponses", "output")
#: Keys of a turn's ``output`` (bring your own inference).
OUTPUT_KEYS: tuple[str, ...] = ("text", "modelIdentifier", "knowledgeBaseIdentifier", "retrievedPassages", "citations")
#: Keys of one retrieved passage.
PASSAGE_KEYS: tuple[str, ...] = ("name", "content", "metadata")
#: Bedrock's limit of turns per conversation in retrieve-and-generate jobs (more is a warning).
MAX_TURNS = 5


@dataclass(frozen=True)
class BedrockOutput:
    """The answer and passages a bring-your-own-inference turn carries.

    Attributes:
        question_id: the id of the turn's question.
        text: the answer.
        passages: ``(text, name)`` pairs in file order; ``name`` is None when not given.
        model_identifier: ``output.modelIdentifier``, or None.
        knowledge_base_identifier: ``output.knowledgeBaseIdentifier``, or None.
    """

    question_id: str
    text: str
    passages: tuple[tuple[str, str | None], ...] = ()
    model_identifier: str | None = None
    knowledge_base_identifier: str | None = None


def looks_like_bedrock(text: str) -> bool:
    """True when the first line that parses as a JSON object has ``conversationTurns``.

    Lines that do not parse are skipped, so a broken first line does not hide the format.
    """
    for line in text.split("\n"):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if isinstance(obj, dict):
            return "conversationTurns" in obj
    return False


class _State:
    """What the lines of one file share: the file's mode, seen questions, counts."""

    def __init__(self) -> None:
        self.byoi: bool | None = None
        self.byoi_line: int = 0
        self.questions: dict[str, int] = {}
        self.n_without_reference = 0


class _Record:
    """Checks one line of a Bedrock file and collects its problems."""

    def __init__(self, number: int, state: _State) -> None:
        self.number = number
        self.state = state
        self.problems: list[Problem] = []
        self.errors = 0

    def error(self, message: str, field: str | None = None) -> None:
        self.errors += 1
        self.problems.append(Problem("error", message, self.number, field))

    def warning(self, message: str, field: str | None = None) -> None:
        self.problems.append(Problem("warning", message, self.number, field))

    def unknown_keys(self, obj: dict[str, Any], known: tuple[str, ...], where: str) -> None:
        for key in obj:
            if key in known:
                continue
            near = nearest(key, known)
            tail = f"; did you mean '{near}'?" if near else f"; known keys: {', '.join(known)}"
            self.error(f"unknown key{tail}", f"{where}.{key}" if where else key)

    def too_long(self, text: str, kind: str, field: str) -> bool:
        """Report ``text`` when it is longer than its kind's limit (:func:`core.golden.lines.too_long`)."""
        message = too_long(text, kind)
        if message:
            self.error(message, field)
        return message is not None

    def text_blocks(self, value: Any, field: str, kind: str = "reference") -> str | None:
        """Join the ``text`` of a ``[{"text": ...}, ...]`` list, or report why not (the joined
        text held to ``kind``'s length limit)."""
        if not isinstance(value, list):
            self.error(f"must be an array of {{\"text\": ...}} blocks, got {json_type(value)}", field)
            return None
        if not value:
            self.error("is empty: give at least one {\"text\": ...} block", field)
            return None
        texts = []
        ok = True
        for i, block in enumerate(value):
            where = f"{field}[{i}]"
            if not isinstance(block, dict):
                self.error(f"must be an object {{\"text\": ...}}, got {json_type(block)}", where)
                ok = False
                continue
            self.unknown_keys(block, ("text",), where)
            text = block.get("text")
            if "text" not in block:
                self.error("missing 'text'", where)
                ok = False
            elif not isinstance(text, str):
                self.error(f"must be a string, got {json_type(text)}", f"{where}.text")
                ok = False
            else:
                texts.append(text)
        if not ok:
            return None
        joined = "\n".join(texts)
        if not joined.strip():
            self.error("is empty: write the text", f"{field}[0].text" if len(value) == 1 else field)
            return None
        if self.too_long(joined, kind, f"{field}[0].text" if len(value) == 1 else field):
            return None
        return joined

    def check(self, line: str) -> tuple[list[GoldenQuestion], list[BedrockOutput]]:
        obj = parse_line_object(line, self.error, "one conversation")
        if obj is None:
            return [], []
        if "conversationTurns" not in obj:
            native = [k for k in obj if k in FIELDS]
            hint = (" (this line looks like the ragtune golden format; a file holds one format)"
                    if native else "")
            self.error(f"missing: a Bedrock record holds 'conversationTurns'{hint}", "conversationTurns")
        self.unknown_keys(obj, RECORD_KEYS, "")
        turns = obj.get("conversationTurns")
        if "conversationTurns" in obj and not isinstance(turns, list):
            self.error(f"must be an array of turns, got {json_type(turns)}", "conversationTurns")
            return [], []
        if not isinstance(turns, list):
            return [], []
        if not turns:
            self.error("is empty: give at least one turn with a prompt", "conversationTurns")
            return [], []
        if len(turns) > MAX_TURNS:
            self.warning(f"{len(turns)} turns: Bedrock evaluation jobs accept at most {MAX_TURNS}", "conversationTurns")

        parsed = [self._turn(turn, t) for t, turn in enumerate(turns)]
        if self.errors:
            return [], []
        questions: list[GoldenQuestion] = []
        outputs: list[BedrockOutput] = []
        history: list[tuple[str, str]] = []
        for t, (prompt, reference, output) in enumerate(parsed):
            qid = f"line-{self.number}" if len(turns) == 1 else f"line-{self.number}-turn-{t + 1}"
            if not history:
                self._duplicate(prompt or "")
            questions.append(GoldenQuestion(
                id=qid, question=prompt or "", expected=(), reference=reference, line=self.number,
                history=tuple(history),
            ))
            if output is not None:
                outputs.append(BedrockOutput(question_id=qid, **output))
            history.append(("user", prompt or ""))
            answer = output["text"] if output is not None else reference
            if answer is not None:
                history.append(("assistant", answer))
        return questions, outputs

    def _turn(self, turn: Any, t: int) -> tuple[str | None, str | None, dict[str, Any] | None]:
        where = f"conversationTurns[{t}]"
        if not isinstance(turn, dict):
            self.error(f"must be an object with 'prompt', got {json_type(turn)}", where)
            return None, None, None
        self.unknown_keys(turn, TURN_KEYS, where)

        prompt = None
        if "prompt" not in turn:
            self.error("missing: every turn needs a prompt {\"content\": [{\"text\": ...}]}", f"{where}.prompt")
        elif not isinstance(turn["prompt"], dict):
            self.error(f"must be an object {{\"content\": [...]}}, got {json_type(turn['prompt'])}", f"{where}.prompt")
        else:
            self.unknown_keys(turn["prompt"], ("content",), f"{where}.prompt")
            if "content" not in turn["prompt"]:
                self.error("missing 'content'", f"{where}.prompt")
            else:
                prompt = self.text_blocks(turn["prompt"]["content"], f"{where}.prompt.content", "question")

        reference = self._reference(turn.get("referenceResponses"), "referenceResponses" in turn, where)
        output = self._output(turn, where)
        return prompt, reference, output

    def _reference(self, refs: Any, given: bool, where: str) -> str | None:
        field = f"{where}.referenceResponses"
        if not given:
            self.state.n_without_reference += 1
            return None
        if not isinstance(refs, list):
            self.error(f"must be an array of {{\"content\": [...]}}, got {json_type(refs)}", field)
            return None
        if not refs:
            self.state.n_without_reference += 1
            return None
        texts = []
        for i, ref in enumerate(refs):
            if not isinstance(ref, dict):
                self.error(f"must be an object {{\"content\": [...]}}, got {json_type(ref)}", f"{field}[{i}]")
                continue
            self.unknown_keys(ref, ("content",), f"{field}[{i}]")
            if "content" not in ref:
                self.error("missing 'content'", f"{field}[{i}]")
                continue
            texts.append(self.text_blocks(ref["content"], f"{field}[{i}].content"))
        if len(refs) > 1:
            self.warning(f"{len(refs)} reference responses: only the first is used", field)
        return texts[0] if texts else None

    def _output(self, turn: dict[str, Any], where: str) -> dict[str, Any] | None:
        has = "output" in turn
        state = self.state
        if state.byoi is None:
            state.byoi, state.byoi_line = has, self.number
        elif state.byoi != has:
            if has:
                self.error(
                    f"has an 'output' but line {state.byoi_line} has none: a file either carries outputs "
                    "for every turn (bring your own inference) or for none", f"{where}.output",
                )
            else:
                self.error(
                    f"missing: line {state.byoi_line} carries outputs (bring your own inference), so every turn "
                    "needs one", f"{where}.output",
                )
            return None
        if not has:
            return None
        out = turn["output"]
        field = f"{where}.output"
        if not isinstance(out, dict):
            self.error(f"must be an object with 'text', got {json_type(out)}", field)
            return None
        self.unknown_keys(out, OUTPUT_KEYS, field)
        text = out.get("text")
        if "text" not in out:
            self.error("missing 'text' (the answer)", field)
        elif not isinstance(text, str):
            self.error(f"must be a string, got {json_type(text)}", f"{field}.text")
        elif not text.strip():
            self.error("is empty: the answer must hold text", f"{field}.text")
        elif self.too_long(text, "reference", f"{field}.text"):
            text = None
        passages = self._passages(out.get("retrievedPassages"), "retrievedPassages" in out, f"{field}.retrievedPassages")
        ids = {}
        for key, name in (("modelIdentifier", "model_identifier"), ("knowledgeBaseIdentifier", "knowledge_base_identifier")):
            value = out.get(key)
            if value is not None and not isinstance(value, str):
                self.error(f"must be a string, got {json_type(value)}", f"{field}.{key}")
            elif isinstance(value, str) and self.too_long(value, "source", f"{field}.{key}"):
                value = None
            ids[name] = value if isinstance(value, str) else None
        if not isinstance(text, str) or not text.strip() or passages is None:
            return None
        return {"text": text, "passages": passages, **ids}

    def _passages(self, value: Any, given: bool, field: str) -> tuple[tuple[str, str | None], ...] | None:
        if not given:
            return ()
        if not isinstance(value, dict):
            self.error(f"must be an object {{\"retrievalResults\": [...]}}, got {json_type(value)}", field)
            return None
        self.unknown_keys(value, ("retrievalResults",), field)
        results = value.get("retrievalResults", [])
        if not isinstance(results, list):
            self.error(f"must be an array, got {json_type(results)}", f"{field}.retrievalResults")
            return None
        out = []
        ok = True
        for i, item in enumerate(results):
            where = f"{field}.retrievalResults[{i}]"
            if not isinstance(item, dict):
                self.error(f"must be an object {{\"content\": {{\"text\": ...}}}}, got {json_type(item)}", where)
                ok = False
                continue
            self.unknown_keys(item, PASSAGE_KEYS, where)
            content = item.get("content")
            text = content.get("text") if isinstance(content, dict) else None
            if not isinstance(content, dict):
                self.error(f"must be an object {{\"text\": ...}}, got {json_type(content)}", f"{where}.content")
                ok = False
            elif not isinstance(text, str):
                self.error(f"must be a string, got {json_type(text)}", f"{where}.content.text")
                ok = False
            else:
                self.unknown_keys(content, ("text",), f"{where}.content")
                ok = not self.too_long(text, "reference", f"{where}.content.text") and ok
            name = item.get("name")
            if name is not None and not isinstance(name, str):
                self.error(f"must be a string, got {json_type(name)}", f"{where}.name")
                ok = False
            elif isinstance(name, str) and self.too_long(name, "source", f"{where}.name"):
                ok = False
            if ok and isinstance(text, str):
                out.append((text, name or None))
        return tuple(out) if ok else None

    def _duplicate(self, prompt: str) -> None:
        key = " ".join(prompt.casefold().split())
        if not key:
            return
        first = self.state.questions.get(key)
        if first is None:
            self.state.questions[key] = self.number
            return
        self.warning(f"same question as line {first} (ignoring case and spaces): it counts twice in the means",
                     "conversationTurns[0].prompt")


def check_bedrock_text(
    text: str, check: GoldenCheck, log: ProblemLog | None = None
) -> tuple[list[GoldenQuestion], dict[str, BedrockOutput]]:
    """Check the decoded text of a Bedrock file; fill ``check`` and return what is ready.

    Sets ``check.format``, ``check.n_lines`` and ``check.n_ready`` and adds every problem
    (with line numbers and field paths) to ``log``, in line order, or appends it to
    ``check.problems`` (unsorted) without one.

    Args:
        text: the file's text (UTF-8 decoded, without a byte order mark).
        check: the check being filled.
        log: where the problems go, bounded as its limits say.

    Returns:
        ``(questions, outputs)``: the questions of the lines without errors, in file order,
        and question id -> :class:`BedrockOutput` for bring-your-own-inference files.
    """
    add = check.problems.append if log is None else log.add
    state = _State()
    questions: list[GoldenQuestion] = []
    outputs: dict[str, BedrockOutput] = {}
    n_with_errors = 0
    for number, line in enumerate(text.split("\n"), start=1):
        line = line.removesuffix("\r")
        if not line.strip():
            continue
        check.n_lines += 1
        record = _Record(number, state)
        found, outs = record.check(line)
        for problem in record.problems:
            add(problem)
        if record.errors:
            n_with_errors += 1
            continue
        questions.extend(found)
        outputs.update({o.question_id: o for o in outs})
    check.format = BYOI_FORMAT if state.byoi else BEDROCK_FORMAT
    check.n_ready = len(questions)
    if not questions:
        add(Problem(
            "error",
            f"nothing ready to score: none of the {plural(check.n_lines, 'row')} is ready "
            f"({n_with_errors} with errors)",
        ))
        return questions, outputs
    add(Problem(
        "warning",
        f"Amazon Bedrock prompt dataset: it names no expected documents, so retrieval metrics cannot score "
        f"its {plural(len(questions), 'question')}; answer metrics can",
    ))
    missing = sum(1 for q in questions if q.reference is None)
    if missing:
        add(Problem(
            "warning",
            f"{plural(missing, 'turn')} without referenceResponses: answer correctness cannot score "
            f"{'it' if missing == 1 else 'them'}",
        ))
    return questions, outputs
