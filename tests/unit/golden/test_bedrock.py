"""Amazon Bedrock prompt datasets read as golden files: turns, history, references, problems
with their lines, bring-your-own-inference answers, and the bundled sample files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.errors import GoldenError
from core.golden import check_golden, format_check, read_golden
from core.golden.reader import read_bedrock_answers

SAMPLE = Path(__file__).resolve().parents[3] / "examples" / "data" / "bedrock-sample"


def turn(prompt, reference=None, output=None, *, reference_first=False):
    out = {}
    ref = None if reference is None else [{"content": [{"text": reference}]}]
    if reference_first and ref is not None:
        out["referenceResponses"] = ref
    out["prompt"] = {"content": [{"text": prompt}]}
    if ref is not None and not reference_first:
        out["referenceResponses"] = ref
    if output is not None:
        out["output"] = output
    return out


def write(tmp_path, lines, name="bedrock.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n", encoding="utf-8")
    return path


def problems(check):
    return [(p.severity, p.line, p.field) for p in check.problems]


# ----------------------------------------------------------------------------- reading


def test_two_turn_record_keeps_history_and_own_references(tmp_path):
    record = {"conversationTurns": [
        turn("Who is Spain's goalkeeper?", "Iker Casillas", reference_first=True),
        turn("How many caps does he have?", "166"),
    ]}
    single = {"conversationTurns": [turn("Who captains Liverpool?", "Jordan Henderson")]}
    golden = read_golden(write(tmp_path, [record, single]))
    assert golden.format == "bedrock"
    first, second, third = golden.questions
    assert (first.id, first.question, first.reference, first.history) == (
        "line-1-turn-1", "Who is Spain's goalkeeper?", "Iker Casillas", ())
    assert second.id == "line-1-turn-2" and second.reference == "166" and second.line == 1
    assert second.history == (("user", "Who is Spain's goalkeeper?"), ("assistant", "Iker Casillas"))
    assert second.history_messages[1] == {"role": "assistant", "content": "Iker Casillas"}
    assert third.id == "line-2" and third.history == ()
    assert all(q.expected == () for q in golden.questions)


def test_text_blocks_are_joined_and_keys_may_come_in_any_order(tmp_path):
    record = {"conversationTurns": [{
        "referenceResponses": [{"content": [{"text": "part one"}, {"text": "part two"}]}],
        "prompt": {"content": [{"text": "Line A"}, {"text": "Line B"}]},
    }]}
    (q,) = read_golden(write(tmp_path, [record])).questions
    assert q.question == "Line A\nLine B" and q.reference == "part one\npart two"


def test_missing_reference_is_allowed_with_a_warning(tmp_path):
    check = check_golden(write(tmp_path, [{"conversationTurns": [turn("Who?")]}]))
    assert check.ok and check.n_ready == 1
    assert any("without referenceResponses" in p.message for p in check.warnings)
    assert read_golden(check.path).questions[0].reference is None


def test_byoi_history_uses_the_earlier_outputs(tmp_path):
    record = {"conversationTurns": [
        turn("Q1?", "R1", {"text": "A1", "retrievedPassages": {"retrievalResults": [{"name": "doc.pdf", "content": {"text": "P1"}}]}}),
        turn("Q2?", "R2", {"text": "A2", "modelIdentifier": "my-model"}),
    ]}
    path = write(tmp_path, [record])
    golden = read_golden(path)
    assert golden.format == "bedrock-byoi"
    assert golden.questions[1].history == (("user", "Q1?"), ("assistant", "A1"))
    answers = read_bedrock_answers(path)
    assert [a.question_id for a in answers] == ["line-1-turn-1", "line-1-turn-2"]
    assert answers[0].answer == "A1" and answers[0].contexts[0].text == "P1" and answers[0].contexts[0].document_id == "doc.pdf"
    assert answers[0].generator_id == "external" and answers[1].generator_id == "external:my-model"
    assert answers[1].contexts == ()


# ----------------------------------------------------------------------------- problems


def test_every_problem_with_its_line(tmp_path):
    lines = [
        {"conversationTurns": [turn("fine?", "yes")]},                                   # 1
        '{"conversationTurns": [',                                                          # 2
        {"conversationTurns": []},                                                          # 3
        {"conversationTurns": [{"referenceResponses": [{"content": [{"text": "r"}]}]}]},    # 4
        {"conversationTurns": [{"prompt": {"content": [{"text": 5}]}, "referenceResponse": []}]},  # 5
        "",                                                                                 # 6
        {"question": "native?", "expected": ["a.pdf"]},                                     # 7
        '{"conversationTurns": [], "conversationTurns": []}',                               # 8
        {"conversationTurns": [{"prompt": {"content": []}}]},                               # 9
        {"conversationTurns": [{"prompt": {"content": [{"text": "  "}]}}]},                 # 10
        {"conversationTurns": "Who?"},                                                      # 11
    ]
    check = check_golden(write(tmp_path, lines))
    assert not check.ok and check.n_lines == 10 and check.n_ready == 1
    errors = [(p.line, p.field) for p in check.errors]
    assert (2, None) in errors and "not valid JSON" in check.errors[0].message
    assert (3, "conversationTurns") in errors
    assert (4, "conversationTurns[0].prompt") in errors
    assert (5, "conversationTurns[0].prompt.content[0].text") in errors
    assert (5, "conversationTurns[0].referenceResponse") in errors
    typo = next(p for p in check.errors if p.field == "conversationTurns[0].referenceResponse")
    assert "did you mean 'referenceResponses'" in typo.message
    native = [p for p in check.errors if p.line == 7]
    assert any("ragtune golden format" in p.message for p in native)
    assert (7, "question") in errors and (7, "expected") in errors
    assert any(p.line == 8 and "more than once" in p.message for p in check.errors)
    assert (9, "conversationTurns[0].prompt.content") in errors
    assert (10, "conversationTurns[0].prompt.content[0].text") in errors
    assert (11, "conversationTurns") in errors
    assert [p.line for p in check.problems] == sorted(p.line for p in check.problems if p.line is not None) + [
        None for p in check.problems if p.line is None
    ]
    with pytest.raises(GoldenError) as info:
        read_golden(check.path)
    assert f"{check.path}:2: error:" in str(info.value)


def test_byoi_outputs_must_be_on_every_turn(tmp_path):
    lines = [
        {"conversationTurns": [turn("a?", "r", {"text": "A"})]},
        {"conversationTurns": [turn("b?", "r")]},
        {"conversationTurns": [turn("c?", "r", {"text": "  "})]},
        {"conversationTurns": [turn("d?", "r", {"answer": "D"})]},
        {"conversationTurns": [turn("e?", "r", {"text": "E", "retrievedPassages": {"retrievalResults": [{"content": "P"}]}})]},
    ]
    check = check_golden(write(tmp_path, lines))
    fields = {(p.line, p.field) for p in check.errors}
    assert (2, "conversationTurns[0].output") in fields
    assert "line 1 carries outputs" in next(p.message for p in check.errors if p.line == 2)
    assert (3, "conversationTurns[0].output.text") in fields
    assert (4, "conversationTurns[0].output.answer") in fields and (4, "conversationTurns[0].output") in fields
    assert (5, "conversationTurns[0].output.retrievedPassages.retrievalResults[0].content") in fields
    assert check.n_ready == 1 and check.format == "bedrock-byoi"


def test_warnings_for_repeats_extra_references_and_long_conversations(tmp_path):
    two_refs = turn("x?", "first")
    two_refs["referenceResponses"].append({"content": [{"text": "second"}]})
    lines = [
        {"conversationTurns": [two_refs]},
        {"conversationTurns": [turn("Same?", "r")]},
        {"conversationTurns": [turn("same?  ", "r")]},
        {"conversationTurns": [turn(f"t{i}?", "r") for i in range(6)]},
    ]
    check = check_golden(write(tmp_path, lines))
    assert check.ok
    messages = {(p.line, p.message) for p in check.warnings}
    assert (1, "2 reference responses: only the first is used") in messages
    assert (3, "same question as line 2 (ignoring case and spaces): it counts twice in the means") in messages
    assert any(line == 4 and "at most 5" in m for line, m in messages)
    assert read_golden(check.path).questions[0].reference == "first"


def test_not_byoi_answers_are_refused(tmp_path):
    path = write(tmp_path, [{"conversationTurns": [turn("a?", "r")]}])
    with pytest.raises(GoldenError, match="not a bring-your-own-inference file"):
        read_bedrock_answers(path)
    bad = write(tmp_path, [{"conversationTurns": []}], name="bad.jsonl")
    with pytest.raises(GoldenError, match="cannot run"):
        read_bedrock_answers(bad)


def test_first_broken_line_does_not_hide_the_format(tmp_path):
    check = check_golden(write(tmp_path, ["{broken", {"conversationTurns": [turn("a?", "r")]}]))
    assert check.format == "bedrock" and check.n_ready == 1 and [p.line for p in check.errors] == [1]


# ----------------------------------------------------------------------------- bundled files


def test_bundled_prompt_dataset():
    check = check_golden(SAMPLE / "bedrock_prompts.jsonl")
    assert check.ok and check.n_ready == 15 and check.format == "bedrock"
    assert check.to_dict()["format"] == "bedrock"
    assert "[Amazon Bedrock prompt dataset]" in format_check(check).splitlines()[0]
    golden = read_golden(SAMPLE / "bedrock_prompts.jsonl")
    first = golden.questions[0]
    assert first.id == "line-1" and first.question == "Who is main Spain's goalkeeper?"
    assert first.reference.startswith("Spain's main goalkeeper appears to be Iker Casillas.")
    assert golden.questions[14].reference == "Manuel Neuer, Jérôme Boateng, Joshua Kimmich, Thomas Müller, Mario Götze"
    # the same questions as the derived native golden file, in the same order
    derived = read_golden(SAMPLE / "golden_derived.jsonl")
    assert derived.format == "ragtune"
    assert [q.question for q in golden.questions] == [q.question for q in derived.questions]
    assert [q.reference for q in golden.questions] == [q.reference for q in derived.questions]


def test_bundled_byoi_dataset():
    golden = read_golden(SAMPLE / "bedrock_byoi.jsonl")
    assert golden.format == "bedrock-byoi" and len(golden.questions) == 50
    answers = read_bedrock_answers(SAMPLE / "bedrock_byoi.jsonl")
    assert [a.question_id for a in answers] == [q.id for q in golden.questions]
    assert sum(len(a.contexts) for a in answers) == 100
    assert answers[0].answer == "Amazon's SEC file number is 000-22513."
    assert [c.text for c in answers[0].contexts] == [
        "Commission File No. 000-22513", "AMAZON.COM, INC. (Exact name of registrant as specified in its charter)"]
    assert all(a.generator_id == "external:third-party-model" for a in answers)


# ----------------------------------------------------------------------------- metrics on them


def test_retrieval_metrics_leave_bedrock_questions_out():
    from core.chunking.base import Chunk
    from core.metrics.retrieval import GRAINS, evaluate_rankings

    questions = read_golden(SAMPLE / "bedrock_prompts.jsonl").questions
    chunk = Chunk("Iker Casillas", "c1", {"document_id": "spain-players.json", "sequence_number": 0})
    results = evaluate_rankings(questions, {q.id: [chunk] for q in questions})
    for grain in GRAINS:
        agg = results[grain].aggregate
        assert (agg.n_scored, agg.n_unscorable, agg.means, agg.reason) == (0, 15, {}, "no scorable question")
        assert all(r.scores is None for r in results[grain].per_question.values())


def test_answer_metrics_score_byoi_answers_without_generating():
    from core.metrics.answers import answer_report

    golden = read_golden(SAMPLE / "bedrock_byoi.jsonl")
    report = answer_report(golden.questions, read_bedrock_answers(SAMPLE / "bedrock_byoi.jsonl"))
    faith = report.metric("unitxt.faithfulness")
    assert faith.n_scored == 50 and 0.0 < faith.mean < 1.0
    # line 1: answer [amazons sec file number is 00022513] vs passage [commission file no
    # 00022513]: {file, 00022513} -> 2/6; the other passage shares nothing
    assert report.questions[0]["metrics"][0]["score"] == pytest.approx(2 / 6)
    assert report.metric("unitxt.answer_correctness").n_scored == 50
    context = report.metric("unitxt.context_correctness")
    assert context.n_unscorable == 50 and context.mean is None
    assert report.overall_metrics == ["unitxt.faithfulness", "unitxt.answer_correctness"]


# ----------------------------------------------------------------------------- converted files


def test_a_converted_file_rebuilds_each_turns_history_from_its_metadata(tmp_path):
    """The rows ``ragtune suggest`` writes for a two-turn record (its format, by hand), checked
    by a person (no ``draft``): read back, each question has the history the Bedrock file gives."""
    record = {"conversationTurns": [turn("Who is Spain's goalkeeper?", "Iker Casillas"),
                                    turn("How many caps does he have?", "166")]}
    bedrock = read_golden(write(tmp_path, [record])).questions
    rows = []
    for number, q in enumerate(bedrock, start=1):
        rows.append({"id": q.id, "question": q.question, "expected": ["spain-players.json"], "reference": q.reference,
                     "metadata": {"bedrock": {"line": q.line, "turn": number, "history": q.history_messages}}})
    converted = read_golden(write(tmp_path, rows, "converted.jsonl")).questions
    assert [(q.id, q.question, q.reference, q.history) for q in converted] == [
        (q.id, q.question, q.reference, q.history) for q in bedrock]
    assert converted[1].history == (("user", "Who is Spain's goalkeeper?"), ("assistant", "Iker Casillas"))


@pytest.mark.parametrize("history, field", [
    ("user: hi", "metadata.bedrock.history"),
    ([{"role": "user", "content": "hi"}, {"role": "system", "content": "x"}], "metadata.bedrock.history[1]"),
    ([{"role": "user", "content": 3}], "metadata.bedrock.history[0]"),
])
def test_a_malformed_kept_history_is_an_error_with_its_line_and_field(tmp_path, history, field):
    rows = [{"id": "a", "question": "Who?", "expected": ["x.txt"]},
            {"id": "b", "question": "And then?", "expected": ["x.txt"], "metadata": {"bedrock": {"history": history}}}]
    check = check_golden(write(tmp_path, rows, "converted.jsonl"))
    assert [(p.line, p.field) for p in check.errors] == [(2, field)]
    other = [{"id": "c", "question": "Who?", "expected": ["x.txt"], "metadata": {"source": {"history": "free"}}}]
    assert read_golden(write(tmp_path, other, "other.jsonl")).questions[0].history == ()  # only bedrock's is read
