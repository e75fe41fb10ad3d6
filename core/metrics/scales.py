"""The LLM judge's metrics by name, with the scale each is asked on: the one home that both the
judge (:mod:`core.metrics.llm_judge`, which adds each metric's instructions) and the golden
file's people's grades (``grades`` in :mod:`core.golden.reader`, read below the metrics) take
them from. Bedrock's RAG evaluation names (correctness, completeness, faithfulness,
helpfulness) plus answer relevance.
"""

from typing import NamedTuple


class JudgeScale(NamedTuple):
    """A judge metric's name and scale.

    Attributes:
        name: the short name (``"correctness"``).
        low: lowest score on the judge's scale.
        high: highest score on the judge's scale.
        integer: True when only whole numbers are valid (a 1-5 rating).
    """

    name: str
    low: float
    high: float
    integer: bool


#: Every judge metric's scale, by name.
JUDGE_SCALES: dict[str, JudgeScale] = {
    "answer_relevance": JudgeScale("answer_relevance", 1, 5, True),
    "correctness": JudgeScale("correctness", 0, 1, False),
    "completeness": JudgeScale("completeness", 0, 1, False),
    "faithfulness": JudgeScale("faithfulness", 0, 1, False),
    "helpfulness": JudgeScale("helpfulness", 0, 1, False),
}
