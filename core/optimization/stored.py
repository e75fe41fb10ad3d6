"""An experiment whose state lives in a ``Files`` store, driven step by step from outside.

The local runner (:mod:`core.optimization.runner`) drives a study in one process. A serverless
deployment cannot: the Durable orchestrator asks and tells through activities, and each
configuration is evaluated by a queue-triggered function on whatever instance picks it up.
:class:`StoredExperiment` is what those functions call: every step loads the state from the
store, does its work, and saves it back.

Layout under ``experiments/<experiment id>/`` in the store:

- ``request.json``: the validated request (:func:`parse_experiment_request`), with the
  objective chosen and the golden file's sha256;
- ``study.json``: the study's state (:meth:`core.optimization.Study.to_json`);
- ``queued/<configuration key>``: an empty marker once its evaluation message was sent;
- ``results/<configuration key>.json``: each evaluation's full result
  (:func:`core.evaluation.single.run_single_evaluation`);
- ``report.json``: the final report (:meth:`StoredExperiment.build_report`).

Messages and events carry references and small numbers only: the queue message of one
evaluation (:meth:`StoredExperiment.evaluation_message`) holds the experiment and
orchestration ids, the configuration, the golden file's address and sha256, and the documents'
address; never documents or questions. An *outcome* (what an evaluation reports back) is
``{"key", "configuration", "score", "metrics", "error"}`` with ``metrics`` the metric means.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any, Mapping

from core.errors import ConfigError
from core.reports.files import is_safe_id

logger = logging.getLogger(__name__)

#: Prefix of the experiments in the store.
EXPERIMENTS_PREFIX = "experiments"
#: Largest ``max_evals`` a request may ask for.
MAX_EVALS_LIMIT = 1000
#: Version of the evaluation message layout.
MESSAGE_VERSION = 1
REQUEST_FIELDS = ("golden", "documents", "space", "optimizer", "max_evals", "seed", "objective", "vector_store")


#: Largest experiment request, in bytes of JSON: one configuration of it travels in each queue
#: message, and a queue message holds at most 64 KB (Base64 adds a third).
MAX_REQUEST_BYTES = 32 * 1024
#: Longest golden or documents address, in characters.
MAX_ADDRESS_CHARS = 2048
#: Largest seed.
MAX_SEED = 2**32 - 1
REMOTE_SCHEMES = ("s3://", "https://", "http://")


def parse_experiment_request(body: Any, *, golden_required: bool = True, remote_only: bool = False,
                             blob_endpoint: str | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """Validate an experiment request (the body of ``POST /api/experiments``, or an
    ``experiment.json`` beside a golden file).

    Fields: ``golden`` and ``documents`` (addresses: local path, ``s3://``, Blob URL; both
    required, ``golden`` optional when ``golden_required`` is False), ``space`` (parameter ->
    non-empty list of values), ``optimizer`` (``gam`` | ``random``, default ``gam``),
    ``max_evals`` (1..1000, default 12), ``seed`` (0..2**32-1, default 0), ``objective`` (a
    metric name, default: chosen from the golden file), ``vector_store`` (a backend name: the
    space's ``vector_store`` parameter, default the app's ``RAGTUNE_VECTOR_STORE``). The whole
    request is at most :data:`MAX_REQUEST_BYTES` of JSON.

    Args:
        body: the parsed JSON.
        golden_required: whether ``golden`` must be given.
        remote_only: addresses must be ``s3://<bucket>/...`` or URLs in the app's own Blob
            storage (below ``blob_endpoint``), without a query string or user info (requests
            from the network: a local path would read the host's own files; any other host
            would be sent the app's storage credential; a SAS token or password would be kept
            in the orchestration's history and the experiment's state).
        blob_endpoint: the app's Blob endpoint (``Settings.blob_address("")`` without the
            trailing container); with ``remote_only``, None refuses every http(s) address.

    Returns:
        ``(request, errors)``: the request with defaults filled in (None when there are
        errors), and every problem found, one message each.
    """
    import json as _json

    from core.optimization.space import PARAMETER_NAMES
    from core.vectorstores import BACKENDS

    if not isinstance(body, dict):
        return None, ["the body must be a JSON object"]
    size = len(_json.dumps(body, ensure_ascii=False).encode("utf-8"))
    if size > MAX_REQUEST_BYTES:
        return None, [f"the request is {size} bytes of JSON; at most {MAX_REQUEST_BYTES} are accepted "
                      "(each configuration travels in a queue message of at most 64 KB)"]
    errors = [f"unknown field {k!r} (known: {', '.join(REQUEST_FIELDS)})" for k in body if k not in REQUEST_FIELDS]
    for name in ("golden", "documents"):
        value = body.get(name)
        if name == "golden" and not golden_required and value is None:
            continue
        if not isinstance(value, str) or not value.strip():
            errors.append(f"{name!r} is required: the {name} address as a non-empty string")
        elif len(value) > MAX_ADDRESS_CHARS or any(ord(c) < 32 for c in value):
            errors.append(f"{name!r} must be an address of at most {MAX_ADDRESS_CHARS} characters without "
                          "control characters")
        elif remote_only:
            problem = _remote_problem(value.strip(), blob_endpoint)
            if problem:
                errors.append(f"{name!r} {problem}")
    space = body.get("space")
    if space is None:
        space = {}
    if not isinstance(space, dict):
        errors.append("'space' must be an object: parameter name -> list of values")
        space = {}
    for name, values in space.items():
        if name not in PARAMETER_NAMES:
            errors.append(f"space: unknown parameter {name!r} (known: {', '.join(PARAMETER_NAMES)})")
        elif not isinstance(values, list) or not values:
            errors.append(f"space: {name!r} must be a non-empty list of values")
    optimizer = body.get("optimizer", "gam")
    if optimizer not in ("gam", "random"):
        errors.append(f"'optimizer' must be 'gam' or 'random', got {_shown_value(optimizer)}")
    max_evals = body.get("max_evals", 12)
    if isinstance(max_evals, bool) or not isinstance(max_evals, int) or not 1 <= max_evals <= MAX_EVALS_LIMIT:
        errors.append(f"'max_evals' must be an integer from 1 to {MAX_EVALS_LIMIT}, got {_shown_value(max_evals)}")
    seed = body.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        errors.append(f"'seed' must be an integer from 0 to {MAX_SEED}, got {_shown_value(seed)}")
    objective = body.get("objective")
    if objective is not None:
        from core.evaluation.single import check_objective

        try:
            check_objective(objective)
        except ConfigError as exc:
            errors.append(f"'objective': {exc}")
    vector_store = body.get("vector_store")
    if vector_store is not None and vector_store not in BACKENDS:
        errors.append(f"'vector_store' must be one of {', '.join(BACKENDS)}, got {_shown_value(vector_store)}")
    if errors:
        return None, errors
    golden = body.get("golden")
    return {"golden": golden.strip() if isinstance(golden, str) else None, "documents": body["documents"].strip(),
            "space": space, "optimizer": optimizer, "max_evals": max_evals, "seed": seed, "objective": objective,
            "vector_store": vector_store}, []


def _remote_problem(address: str, blob_endpoint: str | None) -> str | None:
    """Why ``address`` may not come from the network, or None (see ``remote_only``)."""
    from urllib.parse import urlsplit

    lowered = address.lower()
    if not lowered.startswith(REMOTE_SCHEMES):
        return "must be an s3:// or Blob storage URL (local paths are not accepted here)"
    if "?" in address or "#" in address:
        return ("must not carry a query string (a SAS token would be stored with the experiment): the app "
                "reads storage with its own connection or identity")
    parts = urlsplit(address)
    if "@" in parts.netloc:
        return "must not carry a user name or password"
    if lowered.startswith("s3://"):
        return None if parts.netloc and parts.path.strip("/") else "must name a bucket and a key: s3://<bucket>/<key>"
    endpoint = (blob_endpoint or "").rstrip("/").lower()
    if not endpoint or not lowered.startswith(endpoint + "/") or not address[len(endpoint) + 1:].strip("/"):
        where = f"below {blob_endpoint.rstrip('/')}/" if blob_endpoint else "(no Blob storage is configured)"
        return f"must be a URL in the app's own Blob storage {where}: the app's credential goes to no other host"
    return None


def _shown_value(value: Any) -> str:
    """``repr(value)``, cut to 60 characters (an integer written out in full)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def request_overrides(request: Mapping[str, Any]) -> dict[str, tuple[Any, ...]]:
    """The search-space overrides a request asks for: its ``space`` (parameter -> values) and
    its ``vector_store`` as the ``vector_store`` parameter's only value."""
    overrides = {k: tuple(v) for k, v in (request.get("space") or {}).items()}
    if request.get("vector_store"):
        overrides["vector_store"] = (request["vector_store"],)
    return overrides


def check_request_space(request: Mapping[str, Any], settings: Any) -> list[str]:
    """Check a parsed request's ``space`` and ``vector_store`` against the app's models and
    stores without loading a model: values of the right type and domain, known model names,
    and at least one valid configuration (the embedding models' context lengths are only known
    at ``prepare``, which checks again).

    Returns:
        The problems found (empty when the space can be built).
    """
    from core.evaluation.single import EXTRACTIVE
    from core.optimization.space import default_space, unconfigured_values

    try:
        embedding = settings.embedding_model()
        chat = settings.chat_model()
        space = default_space({embedding.model_id: None}, [EXTRACTIVE, *([chat.model_id] if chat else [])],
                              [settings.vector_store])
        overrides = request_overrides(request)
        reranker = settings.reranker()
        available = {"embedding_model": list(settings.embedding_models()),
                     "reranker": ["none", *([reranker.model_id] if reranker is not None else [])],
                     "foundation_model": [EXTRACTIVE, *([chat.model_id] if chat else [])],
                     "vector_store": sorted(settings.vector_store_configs(settings.out_dir))}
        problems = unconfigured_values(overrides, available, "the request's space")
        if problems:
            return problems
        if overrides:
            space.with_overrides(overrides, source="the request's space")
    except ConfigError as exc:
        return [str(exc)]
    return []


def golden_instance_id(blob_name: str, sha256: str) -> str:
    """The orchestration instance id (and experiment id) started by the golden file
    ``blob_name`` with content hash ``sha256``: ``golden-<16 hex of sha256(name)>-<16 hex of
    the content sha256>``. The same name and content always give the same id, so a repeated
    event or a save that changed nothing starts nothing new."""
    return f"golden-{hashlib.sha256(blob_name.encode('utf-8')).hexdigest()[:16]}-{sha256[:16]}"


def evaluated_event(key: str) -> str:
    """The name of the external event that reports configuration ``key``'s outcome."""
    return f"evaluated-{key}"


def failed_outcome(configuration: Mapping[str, Any], error: str) -> dict[str, Any]:
    """The outcome of an evaluation that produced no score: ``{"key", "configuration",
    "score": None, "metrics": None, "error"}``."""
    from core.optimization import Configuration

    return {"key": Configuration(configuration).key, "configuration": dict(configuration), "score": None,
            "metrics": None, "error": error}


def parse_evaluation_message(data: bytes | str) -> dict[str, Any]:
    """Parse and check one evaluation message (the queue message body, decoded from Base64
    by the host).

    Returns:
        ``{"v", "experiment_id", "instance_id", "key", "configuration", "golden": {"address",
        "sha256"}, "documents"}``.

    Raises:
        ConfigError: not JSON, or a field missing or of the wrong type (names the field).
    """
    from core.optimization import Configuration

    try:
        message = json.loads(data)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"evaluation message is not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise ConfigError("evaluation message must be a JSON object")
    if message.get("v") != MESSAGE_VERSION:
        raise ConfigError(f"evaluation message version must be {MESSAGE_VERSION}, got {message.get('v')!r}")
    for name in ("experiment_id", "instance_id", "key", "documents"):
        if not isinstance(message.get(name), str) or not message[name]:
            raise ConfigError(f"evaluation message: {name!r} must be a non-empty string")
    if not is_safe_id(message["experiment_id"]):
        raise ConfigError(f"evaluation message: bad experiment_id {message['experiment_id']!r}")
    golden = message.get("golden")
    if not isinstance(golden, dict) or not all(isinstance(golden.get(k), str) for k in ("address", "sha256")):
        raise ConfigError("evaluation message: 'golden' must be {\"address\": str, \"sha256\": str}")
    if not isinstance(message.get("configuration"), dict):
        raise ConfigError("evaluation message: 'configuration' must be an object")
    if Configuration(message["configuration"]).key != message["key"]:
        raise ConfigError("evaluation message: 'key' does not match the configuration")
    return message


class StoredExperiment:
    """One experiment's state in a ``Files`` store (see the module docstring for the layout).

    Every method loads what it needs and saves what it changed, so any process may run any
    step; steps may be retried (a retried ``ask`` returns the same pending configurations, a
    retried ``tell`` ignores what was told already, a re-delivered evaluation returns its
    stored result).

    Args:
        files: the report store's ``Files``.
        experiment_id: letters, digits, ``_``, ``.``, ``-``.

    Raises:
        ConfigError: a bad experiment id.
    """

    def __init__(self, files: Any, experiment_id: str) -> None:
        if not is_safe_id(experiment_id):
            raise ConfigError(f"experiment id may only hold letters, digits, '_', '.' and '-', got {experiment_id!r}")
        self.files = files
        self.experiment_id = experiment_id
        self.prefix = f"{EXPERIMENTS_PREFIX}/{experiment_id}"

    # Storage ----------------------------------------------------------------------------------
    def _write(self, name: str, data: Any) -> None:
        self.files.write_bytes(f"{self.prefix}/{name}", json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8"))

    def _read(self, name: str) -> Any:
        return json.loads(self.files.read_bytes(f"{self.prefix}/{name}"))

    def exists(self) -> bool:
        """Whether the experiment was prepared (its study is stored)."""
        return self.files.exists(f"{self.prefix}/study.json")

    def request(self) -> dict[str, Any]:
        """The stored request (``request.json``). Raises ``StoreError`` when absent."""
        return self._read("request.json")

    def study(self) -> Any:
        """The stored ``Study``. Raises ``StoreError`` when absent."""
        from core.optimization import Study

        return Study.from_json(self.files.read_bytes(f"{self.prefix}/study.json"))

    def _save_study(self, study: Any) -> None:
        self.files.write_bytes(f"{self.prefix}/study.json", study.to_json().encode("utf-8"))

    def results(self) -> dict[str, dict[str, Any]]:
        """Every stored evaluation result by configuration key."""
        out = {}
        for key in self.files.list(f"{self.prefix}/results"):
            out[key.rsplit("/", 1)[-1].removesuffix(".json")] = json.loads(self.files.read_bytes(key))
        return out

    # Steps ------------------------------------------------------------------------------------
    def prepare(self, request: Mapping[str, Any], settings: Any) -> dict[str, Any]:
        """Read the golden file, build the space, and store the request and a new study; an
        experiment already prepared is left as it is.

        Args:
            request: a request from :func:`parse_experiment_request` (``golden`` set).
            settings: ``core.settings.Settings`` (models, vector store, storage).

        Returns:
            ``{"objective", "n_valid", "max_evals"}``.

        Raises:
            GoldenError / ConfigError / StoreError: the golden file, the documents (missing or
                empty), the objective, the space or the settings are unusable.
        """
        from core.evaluation.single import EXTRACTIVE
        from core.golden import read_golden
        from core.optimization.runner import ExperimentOptions, _sampler, build_space, default_objective
        from core.optimization.study import Study

        if self.exists():
            study = self.study()
        else:
            from core.documents import list_document_ids
            from core.evaluation.single import check_objective
            from core.inputs import shown_address

            if request.get("objective"):
                check_objective(request["objective"], has_judge=settings.judge_model() is not None)
            golden = read_golden(request["golden"])
            if not list_document_ids(request["documents"]):
                raise ConfigError(f"{shown_address(request['documents'])} holds no documents to load "
                                  "(missing, empty, or no supported file types)")
            objective = request.get("objective") or default_objective(golden)
            overrides = request_overrides(request)
            options = ExperimentOptions(optimizer=request["optimizer"], max_evals=request["max_evals"],
                                        seed=request["seed"], objective=objective, overrides=overrides,
                                        overrides_source="the request's space")
            embedding, chat = models_from_settings(settings)
            reranker = settings.reranker()
            space = build_space(options, embedding, [EXTRACTIVE, *chat], [settings.vector_store],
                                default_embedding_models=list(embedding)[:1],  # the configured one comes first
                                rerankers=[reranker.model_id] if reranker is not None else [])
            study = Study(space, _sampler(options), objective, options.seed, max_evals=options.max_evals)
            self._write("request.json", {**request, "experiment_id": self.experiment_id, "objective": objective,
                                         "golden_sha256": golden.sha256,
                                         "golden_format": getattr(golden, "format", "ragtune"),
                                         "n_questions": len(golden.questions)})
            self._save_study(study)
        return {"objective": study.objective_metric, "n_valid": study.space.n_valid, "max_evals": study.max_evals}

    def ask(self) -> list[dict[str, Any]]:
        """The next configurations to evaluate (the sampler's natural batch; the GAM is fitted
        here); configurations asked before and never told come back first, so a retried step
        loses nothing. An empty list means the study is finished."""
        study = self.study()
        pending = [dict(t.configuration) for t in study.pending_trials]
        if pending:
            return pending
        configurations = [dict(c) for c in study.ask(None)]
        self._save_study(study)
        return configurations

    def evaluation_message(self, instance_id: str, configuration: Mapping[str, Any]) -> dict[str, Any]:
        """The queue message asking for one evaluation (see :func:`parse_evaluation_message`).

        Its size does not grow with the golden file or the corpus: it holds references only.
        """
        from core.optimization import Configuration

        request = self.request()
        return {"v": MESSAGE_VERSION, "experiment_id": self.experiment_id, "instance_id": instance_id,
                "key": Configuration(configuration).key, "configuration": dict(configuration),
                "golden": {"address": request["golden"], "sha256": request["golden_sha256"]},
                "documents": request["documents"]}

    def was_enqueued(self, key: str) -> bool:
        """Whether configuration ``key``'s evaluation message was sent already (``queued/<key>``)."""
        return self.files.exists(f"{self.prefix}/queued/{key}")

    def mark_enqueued(self, key: str) -> None:
        """Record that configuration ``key``'s evaluation message was sent, so a retried
        enqueue step does not send it twice."""
        self.files.write_bytes(f"{self.prefix}/queued/{key}", b"")

    def evaluate(self, message: Mapping[str, Any], settings: Any) -> dict[str, Any]:
        """Run one evaluation asked by ``message`` and store its result; a configuration whose
        result is already stored is not evaluated again (re-delivered messages).

        A failed evaluation is a result: it is stored with its error and its outcome has
        ``score`` None.

        Returns:
            The outcome ``{"key", "configuration", "score", "metrics", "error", "stored"}``:
            ``score`` is the objective's mean; ``stored`` says the result was already there.

        Raises:
            ConfigError: the experiment is not stored (checked before anything runs).
            StoreError: the store cannot be read or written (the message is retried).
        """
        from core.errors import StoreError

        if not self.files.exists(f"{self.prefix}/request.json"):
            raise ConfigError(f"no experiment {self.experiment_id!r} is stored: nothing evaluated")
        name = f"results/{message['key']}.json"
        if self.files.exists(f"{self.prefix}/{name}"):
            return {**self._outcome(self._read(name), message["configuration"]), "stored": True}
        try:
            result = self._run(message, settings)
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - a failed evaluation is recorded, never lost
            logger.exception("configuration %s of experiment %s failed", message["key"], self.experiment_id)
            result = {"key": message["key"], "configuration": dict(message["configuration"]), "status": "failed",
                      "error": f"{type(exc).__name__}: {exc}", "metrics": {}}
        self._write(name, result)
        return {**self._outcome(result, message["configuration"]), "stored": False}

    def _run(self, message: Mapping[str, Any], settings: Any) -> dict[str, Any]:
        from core.evaluation.single import Corpus, EvaluationContext, run_single_evaluation
        from core.golden import read_golden
        from core.inputs import shown_address

        golden = read_golden(message["golden"]["address"])
        if golden.sha256 != message["golden"]["sha256"]:
            raise ConfigError(f"the golden file {shown_address(message['golden']['address'])} changed since the experiment started "
                              f"(sha256 {golden.sha256[:12]}..., expected {message['golden']['sha256'][:12]}...)")
        embedding, chat = models_from_settings(settings)
        reranker = settings.reranker()
        context = EvaluationContext(out_dir=settings.out_dir, embedding_models=embedding, chat_models=chat,
                                    vector_store_config=settings.vector_store_config(settings.out_dir),
                                    vector_store_configs=settings.vector_store_configs(settings.out_dir),
                                    judge=settings.judge_model(),
                                    rerankers={reranker.model_id: reranker} if reranker is not None else {})
        return run_single_evaluation(message["configuration"], Corpus.load(message["documents"]), golden,
                                     context=context)

    def _outcome(self, result: Mapping[str, Any], configuration: Mapping[str, Any]) -> dict[str, Any]:
        objective = self.request()["objective"]
        out = failed_outcome(configuration, "")
        out["metrics"] = dict(result.get("metrics") or {}) or None
        if result.get("status") != "ok":
            out["error"] = result.get("error") or "evaluation failed"
        else:
            out["score"] = (result.get("metrics") or {}).get(objective)
            out["error"] = None if out["score"] is not None else f"objective metric {objective!r} was not computed"
        return out

    def tell(self, outcomes: list[Mapping[str, Any]]) -> dict[str, Any]:
        """Tell the study each outcome (a None score is a failed trial) and save it; outcomes
        already told (a retried step) are skipped.

        Returns:
            ``{"evaluated", "failed", "best_score", "best_key"}`` after telling.
        """
        study = self.study()
        for item in outcomes:
            trial = study.trial_of(item["configuration"])
            if trial is None or trial.status != "pending":
                continue
            if item.get("score") is None:
                study.tell(item["configuration"], None, error=item.get("error") or "evaluation failed",
                           metrics=item.get("metrics"))
            else:
                study.tell(item["configuration"], float(item["score"]), metrics=item.get("metrics"))
        self._save_study(study)
        return self.summary(study)

    @staticmethod
    def summary(study: Any) -> dict[str, Any]:
        """``{"evaluated", "failed", "best_score", "best_key"}`` of ``study`` (warm-start
        observations not counted)."""
        best = study.best_trial
        return {"evaluated": study.n_evaluated,
                "failed": sum(1 for t in study.trials if t.status == "failed" and not t.warm_start),
                "best_score": None if best is None else best.score,
                "best_key": None if best is None else best.configuration.key}

    def build_report(self) -> dict[str, Any]:
        """The experiment report from the stored state, at any time: ``{schema_version,
        kind, experiment_id, complete, golden, corpus, space, optimizer, objective,
        leaderboard, best, counts{evaluations, failed, pending}, results{key: result summary},
        study}``. ``complete`` is False until the study is finished. Addresses are shown
        without their query strings (a SAS token never reaches a report).

        Raises:
            StoreError: the experiment is not stored.
        """
        from core.inputs import shown_address
        from core.optimization.runner import report_fields

        study = self.study()
        request = self.request()
        results = self.results()
        shared = report_fields(self.experiment_id, study, results)
        return {
            **{k: shared[k] for k in ("schema_version", "kind", "experiment_id")},
            "complete": study.is_finished,
            "golden": {"path": shown_address(request["golden"]), "sha256": request.get("golden_sha256"),
                       "format": request.get("golden_format"), "n_questions": request.get("n_questions")},
            "corpus": {"path": shown_address(request["documents"])},
            "space": shared["space"],
            "optimizer": {"name": request["optimizer"], "seed": request["seed"], "max_evals": study.max_evals},
            "objective": shared["objective"], "leaderboard": shared["leaderboard"], "best": shared["best"],
            "counts": {"evaluations": study.n_evaluated,
                       "failed": sum(1 for t in study.trials if t.status == "failed"),
                       "pending": len(study.pending_trials)},
            "results": {key: {k: r.get(k) for k in ("status", "error", "metrics", "timings", "collection",
                                                   "store_binding", "stored")}
                        for key, r in results.items()},
            "study": shared["study"],
        }

    def current_report(self) -> dict[str, Any] | None:
        """The final report (``report.json``) when written, else the report so far
        (:meth:`build_report`), or None when the experiment is not stored."""
        if self.files.exists(f"{self.prefix}/report.json"):
            return self._read("report.json")
        return self.build_report() if self.exists() else None

    def write_report(self) -> str:
        """Write ``report.json`` (:meth:`build_report`); returns its key in the store."""
        self._write("report.json", self.build_report())
        return f"{self.prefix}/report.json"


def models_from_settings(settings: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(embedding models, chat models)`` by model id, as the settings configure them: every
    embedding model they reach (``Settings.embedding_models``: the configured one first, then
    the installed local ones), so a request's space may name any of them.

    Raises:
        ConfigError: as ``Settings.embedding_models`` / ``Settings.chat_model``.
    """
    chat = settings.chat_model()
    return settings.embedding_models(), ({chat.model_id: chat} if chat is not None else {})


__all__ = ["StoredExperiment", "parse_experiment_request", "check_request_space", "request_overrides", "parse_evaluation_message", "golden_instance_id",
           "evaluated_event", "failed_outcome", "models_from_settings", "EXPERIMENTS_PREFIX"]
