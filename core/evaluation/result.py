"""The result of evaluating one configuration: a frozen record with ``to_dict`` / ``from_dict``.

This is what ``core.evaluation.single.run_single_evaluation`` gives, what the experiment engine
stores as ``experiments/<id>/results/<key>.json`` and what the reports and pages read. The
engine's own small records (``EvaluationRequest``, ``EvaluationOutcome``) live in
``core.experiment.types``, which re-exports this one beside them.

The stored form is a JSON object; :meth:`EvaluationResult.from_dict` reads it as written by
any earlier version (a field it lacks takes its default, a field it does not know is kept in
``extra`` and written back by :meth:`EvaluationResult.to_dict`), so results stored before still
read and round-trip unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from core.errors import ConfigError

#: The statuses a result may have.
STATUSES = ("ok", "failed")
#: Fields written only when they hold a value (results stored before may lack them).
OPTIONAL_FIELDS = ("models", "cost", "round")


@dataclass(frozen=True)
class EvaluationResult:
    """One configuration's evaluation.

    Attributes:
        key: ``Configuration.key`` of ``configuration``.
        configuration: parameter name -> value.
        status: ``"ok"`` or ``"failed"``.
        error: why it failed (``"<ErrorType>: message"``), else None.
        stored: True when it was read from the stored results instead of evaluated.
        metrics: metric name -> mean (retrieval means at ``rank_grain`` and answer metric
            means; a metric with no scorable question is absent, never NaN).
        retrieval: grain -> the retrieval aggregate (``core.metrics.retrieval``).
        rank_grain: the grain ``metrics`` holds the retrieval means of.
        answers: the answer report (``core.evaluation.answers``), or None.
        collection: the collection searched.
        store_binding: ``{"backend", "location", "collection"}`` (never credentials).
        collection_reused: the collection was reused (None when never reached).
        n_embedded: chunk texts this evaluation sent to the embedding model.
        timings: seconds by step (``chunk_s``, ``index_s``, ``retrieve_s``, ``answers_s``, ``total_s``).
        transient: the failure may pass on a retry (``core.errors.is_transient``).
        models: model id -> description (``core.models.describe``), or None.
        cost: what this evaluation spent (``core.models.spend.Spend.to_dict`` and ``seconds``), or None.
        round: the study's round the configuration was asked in (set by the engine), or None.
        extra: fields of a stored result this version does not name, kept as they were.
    """

    key: str
    configuration: Mapping[str, Any]
    status: str = "failed"
    error: str | None = None
    stored: bool = False
    metrics: Mapping[str, float] = field(default_factory=dict)
    retrieval: Mapping[str, Any] = field(default_factory=dict)
    rank_grain: str | None = None
    answers: Mapping[str, Any] | None = None
    collection: str | None = None
    store_binding: Mapping[str, Any] | None = None
    collection_reused: bool | None = None
    n_embedded: int = 0
    timings: Mapping[str, float] = field(default_factory=dict)
    transient: bool = False
    models: Mapping[str, Any] | None = None
    cost: Mapping[str, Any] | None = None
    round: int | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        """True when the evaluation succeeded."""
        return self.status == "ok"

    def to_dict(self) -> dict[str, Any]:
        """The stored form: every field (mutable copies of the mappings), the optional ones
        (:data:`OPTIONAL_FIELDS`) only when set, then ``extra``."""
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "extra":
                continue
            value = getattr(self, f.name)
            if f.name in OPTIONAL_FIELDS and value is None:
                continue
            out[f.name] = dict(value) if isinstance(value, Mapping) else value
        out.update(self.extra)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "EvaluationResult":
        """Read a stored result (see the module docstring).

        Raises:
            ConfigError: not an object, no string ``key``, no ``configuration`` object, or a
                ``status`` other than ``ok`` / ``failed`` (names the field).
        """
        if not isinstance(data, Mapping):
            raise ConfigError("an evaluation result must be a JSON object")
        if not isinstance(data.get("key"), str):
            raise ConfigError("evaluation result: 'key' must be a string")
        if not isinstance(data.get("configuration"), Mapping):
            raise ConfigError(f"evaluation result {data['key']}: 'configuration' must be an object")
        if data.get("status", "failed") not in STATUSES:
            raise ConfigError(f"evaluation result {data['key']}: 'status' must be one of {', '.join(STATUSES)}")
        names = {f.name for f in fields(cls)} - {"extra"}
        known = {name: data[name] for name in names if name in data}
        return cls(**known, extra={k: v for k, v in data.items() if k not in names})

    @classmethod
    def begin(cls, key: str, configuration: Mapping[str, Any]) -> "EvaluationResult":
        """A result not yet evaluated: failed with no error, to be filled."""
        return cls(key=key, configuration=dict(configuration))
