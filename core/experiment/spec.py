"""The specification of one experiment: what is searched, on which data, with which optimizer.

An :class:`ExperimentSpec` is frozen and JSON-serialisable. It is written once, when the
experiment is prepared (``experiments/<id>/spec.json``), and every later step (ask, evaluate,
tell, report) reads the addresses and settings from it, never from a message or an event.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from core.errors import ConfigError
from core.optimizers import DEFAULT_OPTIMIZER, OPTIMIZERS, SCREEN
from core.optimization.defaults import STARTS
from core.optimization.fidelity import DEFAULT_ETA, DEFAULT_MIN_QUESTIONS, Rungs
from core.optimization.halving import PROMOTIONS
from core.optimization.samplers import GAMSampler, RandomSampler

if TYPE_CHECKING:
    from core.golden.types import GoldenSet

#: Version of ``spec.json``'s layout.
SPEC_VERSION = 1
#: The default objective when the golden file has reference answers, else the retrieval one.
DEFAULT_ANSWER_OBJECTIVE = "unitxt.answer_correctness"
DEFAULT_RETRIEVAL_OBJECTIVE = "mrr"
#: ai4rag's default objective: the mean of the answer metrics (see ``core.metrics.answers``).
OVERALL_SCORE = "overall_score"


def default_objective(golden: GoldenSet, *, has_generator: bool = False) -> str:
    """The objective when none is asked for.

    Args:
        golden: the ``GoldenSet``.
        has_generator: a chat model answers or a judge scores (``RAGTUNE_CHAT_PROVIDER`` or a
            judge is configured).

    Returns:
        ``overall_score`` (ai4rag's default: the mean of the answer metrics) when the questions
        have reference answers and a chat or judge model is configured;
        ``unitxt.answer_correctness`` when they have reference answers and answers come from
        the extractive baseline; ``mrr`` when no question has a reference answer.
    """
    if not any(q.reference for q in golden.questions):
        return DEFAULT_RETRIEVAL_OBJECTIVE
    return OVERALL_SCORE if has_generator else DEFAULT_ANSWER_OBJECTIVE


@dataclass(frozen=True)
class ExperimentSpec:
    """One experiment's inputs and optimizer settings.

    Attributes:
        experiment_id: letters, digits, ``_``, ``.``, ``-``.
        golden: the golden file's address (path, ``s3://``, Blob URL; shown without a query
            string in reports).
        documents: the documents' address.
        objective: the metric maximised.
        optimizer: one of :data:`OPTIMIZERS` (``screen`` sets ``multi_fidelity``, ``promotion``
            and ``start`` as :data:`SCREEN` says, :meth:`screening`).
        max_evals: the most configurations evaluated (None: the whole valid space).
        seed: the study's seed.
        n_random_nodes: configurations of the GAM's random phase.
        evals_per_trial: configurations per GAM fit when no batch size is asked for.
        overrides: parameter -> values the space was narrowed to (for the record; the space
            itself is stored with the study).
        vector_store: the backend asked for, or None (the deployment's default).
        golden_sha256: sha256 of the golden file's bytes when prepared (an evaluation refuses a
            golden file that changed).
        golden_format: ``"ragtune"`` or ``"bedrock"``.
        n_questions: questions in the golden file.
        corpus_fingerprint: sha256 over the documents, when known at prepare time.
        multi_fidelity: score each configuration on a seeded subset of the questions first and
            promote the better ones to more (``core.optimization.fidelity``); only with a
            retrieval objective (answer metrics carry no per-question block), else ignored.
        min_questions: questions of the first rung (None: ``fidelity.DEFAULT_MIN_QUESTIONS``).
        eta: growth of the question count from rung to rung (None: ``fidelity.DEFAULT_ETA``).
        promotion: when a promoted configuration gets its next rung's questions
            (``core.optimization.halving.PROMOTIONS``: ``tied``, at once; ``incumbent``, while it
            is at least as good as the next rung's best on the questions both saw).
        start: the configuration evaluated first (``core.optimization.defaults.STARTS``):
            ``"default"``, the product's default configuration; ``"reranked"``, the same with the
            space's reranker (``reranked_configuration``; none when the space has no reranker);
            None, none. A spec stored with ``start_from_default: true`` reads as ``"default"``.
    """

    experiment_id: str
    golden: str
    documents: str
    objective: str
    optimizer: str = DEFAULT_OPTIMIZER
    max_evals: int | None = 12
    seed: int = 0
    n_random_nodes: int = 4
    evals_per_trial: int = 1
    overrides: Mapping[str, tuple[Any, ...]] = field(default_factory=dict)
    vector_store: str | None = None
    golden_sha256: str = ""
    golden_format: str = "ragtune"
    n_questions: int = 0
    corpus_fingerprint: str | None = None
    multi_fidelity: bool = False
    min_questions: int | None = None
    eta: int | None = None
    promotion: str = "tied"
    start: str | None = None

    def __post_init__(self) -> None:
        for name, kinds in _FIELD_TYPES.items():  # a stored spec is read back through here
            value = getattr(self, name)
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                shown = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
                raise ConfigError(f"{name} must be {shown}, got {value!r}")
        if not isinstance(self.overrides, Mapping) or not all(isinstance(v, (list, tuple))
                                                              for v in self.overrides.values()):
            raise ConfigError(f"overrides must map parameter names to lists of values, got {self.overrides!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ConfigError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, got {self.optimizer!r}")
        if self.promotion not in PROMOTIONS:
            raise ConfigError(f"promotion must be one of {', '.join(PROMOTIONS)}, got {self.promotion!r}")
        if self.start is not None and self.start not in STARTS:
            raise ConfigError(f"start must be one of {', '.join(STARTS)} or None, got {self.start!r}")
        object.__setattr__(self, "overrides", {str(k): tuple(v) for k, v in dict(self.overrides).items()})
        for name in ("min_questions", "eta"):
            value = getattr(self, name)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ConfigError(f"{name} must be a positive integer or None, got {value!r}")

    def rungs(self, question_ids: Sequence[str]) -> Rungs:
        """The experiment's ``core.optimization.fidelity.Rungs`` over ``question_ids`` (golden
        order), seeded by the spec's seed."""
        return Rungs(list(question_ids), self.seed, min_questions=self.min_questions or DEFAULT_MIN_QUESTIONS,
                     eta=self.eta or DEFAULT_ETA)

    def screening(self) -> "ExperimentSpec":
        """This spec with ``screen``'s settings (:data:`SCREEN`) applied; any other optimizer's
        spec unchanged."""
        if self.optimizer != "screen":
            return self
        from dataclasses import replace

        return replace(self, multi_fidelity=bool(SCREEN["multi_fidelity"]), promotion=str(SCREEN["promotion"]),
                       start=SCREEN["start"])

    def sampler(self) -> Any:
        """The study's sampler (``GAMSampler`` or ``RandomSampler``) for these settings
        (``screen``'s is :data:`SCREEN`'s ``sampler``)."""
        name = SCREEN["sampler"] if self.optimizer == "screen" else self.optimizer
        if name == "gam":
            return GAMSampler(n_random_nodes=self.n_random_nodes, evals_per_trial=self.evals_per_trial)
        return RandomSampler()

    def to_dict(self) -> dict[str, Any]:
        """A JSON-clean dict of every field, with ``version``."""
        out: dict[str, Any] = {"version": SPEC_VERSION}
        for f in fields(self):
            value = getattr(self, f.name)
            out[f.name] = {k: list(v) for k, v in value.items()} if f.name == "overrides" else value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "ExperimentSpec":
        """Rebuild from :meth:`to_dict` output.

        Raises:
            ConfigError: not a stored spec, another version, or a missing field.
        """
        if not isinstance(data, Mapping) or data.get("version") != SPEC_VERSION:
            raise ConfigError(f"not an experiment spec of version {SPEC_VERSION}")
        names = {f.name for f in fields(cls)}
        kept = {k: v for k, v in data.items() if k in names}
        if "start" not in data and data.get("start_from_default"):  # stored before ``start``
            kept["start"] = "default"
        try:
            return cls(**kept)
        except TypeError as exc:
            raise ConfigError(f"the stored experiment spec is incomplete: {exc}") from None


#: The type each field of a spec holds (``null`` where None is allowed), checked on every spec.
_FIELD_TYPES: dict[str, tuple[type, ...]] = {
    "experiment_id": (str,), "golden": (str,), "documents": (str,), "objective": (str,), "optimizer": (str,),
    "max_evals": (int, type(None)), "seed": (int,), "n_random_nodes": (int,), "evals_per_trial": (int,),
    "vector_store": (str, type(None)), "golden_sha256": (str,), "golden_format": (str,), "n_questions": (int,),
    "corpus_fingerprint": (str, type(None)), "multi_fidelity": (bool,), "promotion": (str,),
}


__all__ = ["DEFAULT_ANSWER_OBJECTIVE", "DEFAULT_OPTIMIZER", "DEFAULT_RETRIEVAL_OBJECTIVE", "ExperimentSpec",
           "OPTIMIZERS", "OVERALL_SCORE", "SCREEN", "SPEC_VERSION", "default_objective"]
