"""Experiment requests from the network (``POST /api/experiments``, an ``experiment.json``
beside a golden file): validation, the space they ask for, and the names that follow from them.

The experiment itself (its spec, study, results and report) is :class:`core.experiment.Experiment`;
messages and events carry ids and keys only.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING, Any, Mapping

from core.addresses import REMOTE_SCHEMES, scheme_of
from core.errors import ConfigError
from core.evaluation.single import EXTRACTIVE, check_objective
from core.optimizers import DEFAULT_OPTIMIZER, OPTIMIZERS
from core.optimization.parameters import PARAMETER_KINDS, PARAMETER_NAMES, unconfigured_values
from core.optimization.space import default_space
from core.vectorstores import BACKENDS

if TYPE_CHECKING:
    from core.settings import Settings

logger = logging.getLogger(__name__)

#: Largest ``max_evals`` a request may ask for.
MAX_EVALS_LIMIT = 1000
REQUEST_FIELDS = ("golden", "documents", "space", "optimizer", "max_evals", "seed", "objective", "vector_store",
                  "multi_fidelity")


#: Largest experiment request, in bytes of JSON: one configuration of it travels in each queue
#: message, and a queue message holds at most 64 KB (Base64 adds a third).
MAX_REQUEST_BYTES = 32 * 1024
#: Longest golden or documents address, in characters.
MAX_ADDRESS_CHARS = 2048
#: Largest seed.
MAX_SEED = 2**32 - 1


def parse_experiment_request(body: Any, *, golden_required: bool = True, remote_only: bool = False,
                             blob_endpoint: str | None = None) -> tuple[dict[str, Any] | None, list[str]]:
    """Validate an experiment request (the body of ``POST /api/experiments``, or an
    ``experiment.json`` beside a golden file).

    Fields: ``golden`` and ``documents`` (addresses: local path, ``s3://``, Blob URL; both
    required, ``golden`` optional when ``golden_required`` is False), ``space`` (parameter ->
    non-empty list of values), ``optimizer`` (``screen`` | ``gam`` | ``random``, default
    ``screen``: ``core.optimizers.SCREEN``),
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

    if not isinstance(body, dict):
        return None, ["the body must be a JSON object"]
    problem = _unencodable(body)
    if problem:
        return None, [problem]
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
    space = dict(space)
    for name, values in space.items():
        if name not in PARAMETER_NAMES:
            errors.append(f"space: unknown parameter {_shown_value(name)} (known: {', '.join(PARAMETER_NAMES)})")
        elif not isinstance(values, list) or not values:
            errors.append(f"space: {name!r} must be a non-empty list of values")
        elif PARAMETER_KINDS[name] == "integer":
            space[name] = [_integer(v) for v in values]
    optimizer = body.get("optimizer", DEFAULT_OPTIMIZER)
    if optimizer not in OPTIMIZERS:
        errors.append(f"'optimizer' must be one of {', '.join(OPTIMIZERS)}, got {_shown_value(optimizer)}")
    max_evals = _integer(body.get("max_evals", 12))
    if isinstance(max_evals, bool) or not isinstance(max_evals, int) or not 1 <= max_evals <= MAX_EVALS_LIMIT:
        errors.append(f"'max_evals' must be an integer from 1 to {MAX_EVALS_LIMIT}, got {_shown_value(max_evals)}")
    seed = _integer(body.get("seed", 0))
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED:
        errors.append(f"'seed' must be an integer from 0 to {MAX_SEED}, got {_shown_value(seed)}")
    objective = body.get("objective")
    if objective is not None:
        try:
            check_objective(objective)
        except ConfigError as exc:
            errors.append(f"'objective': {exc}")
    vector_store = body.get("vector_store")
    if vector_store is not None and vector_store not in BACKENDS:
        errors.append(f"'vector_store' must be one of {', '.join(BACKENDS)}, got {_shown_value(vector_store)}")
    multi_fidelity = body.get("multi_fidelity", False)
    if not isinstance(multi_fidelity, bool):
        errors.append(f"'multi_fidelity' must be true or false, got {_shown_value(multi_fidelity)}")
    if errors:
        return None, errors
    golden = body.get("golden")
    return {"golden": golden.strip() if isinstance(golden, str) else None, "documents": body["documents"].strip(),
            "space": space, "optimizer": optimizer, "max_evals": max_evals, "seed": seed, "objective": objective,
            "vector_store": vector_store, "multi_fidelity": multi_fidelity}, []


#: Longest integer a request may write, in digits (Python refuses to print more than 4,300).
MAX_INTEGER_DIGITS = 30


def _unencodable(value: Any, where: str = "the body", depth: int = 0) -> str | None:
    """Why ``value`` (parsed JSON) cannot be stored as UTF-8 JSON, or None: a lone surrogate
    (``"\\ud800"``) in a string, an integer of more than :data:`MAX_INTEGER_DIGITS` digits, or
    nesting deeper than 32 levels; the message names where."""
    if depth > 32:
        return f"{where} is nested more than 32 levels deep"
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return (f"{where} holds a lone surrogate (\\u{ord(value[exc.start]):04x} at character {exc.start}), "
                    "which is not Unicode text")
        return None
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return None
    if isinstance(value, int):
        if value.bit_length() > MAX_INTEGER_DIGITS * 3.33:
            return f"{where} holds an integer of more than {MAX_INTEGER_DIGITS} digits"
        return None
    if isinstance(value, dict):
        for k, v in value.items():
            problem = _unencodable(k, f"{where}: a field name", depth + 1) or \
                _unencodable(v, f"{where}.{k}" if isinstance(k, str) and _unencodable(k) is None else where, depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, list):
        for i, v in enumerate(value):
            problem = _unencodable(v, f"{where}[{i}]", depth + 1)
            if problem:
                return problem
    return None


def _integer(value: Any) -> Any:
    """``value`` as an int when it is an integer in all but type (``"200"``, ``200.0``), else
    ``value`` unchanged (the caller reports it)."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value.strip()) <= MAX_INTEGER_DIGITS:
        return int(value.strip())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _remote_problem(address: str, blob_endpoint: str | None) -> str | None:
    """Why ``address`` may not come from the network, or None (see ``remote_only``)."""
    from urllib.parse import urlsplit

    lowered = address.lower()
    if scheme_of(address) not in REMOTE_SCHEMES:
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


def check_request_space(request: Mapping[str, Any], settings: Settings) -> list[str]:
    """Check a parsed request's ``space`` and ``vector_store`` against the app's models and
    stores without loading a model: values of the right type and domain, known model names,
    and at least one valid configuration (the embedding models' context lengths are only known
    at ``prepare``, which checks again).

    Returns:
        The problems found (empty when the space can be built).
    """
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


def models_from_settings(settings: Settings) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(embedding models, chat models)`` by model id, as the settings configure them: every
    embedding model they reach (``Settings.embedding_models``: the configured one first, then
    the installed local ones), so a request's space may name any of them.

    Raises:
        ConfigError: as ``Settings.embedding_models`` / ``Settings.chat_model``.
    """
    chat = settings.chat_model()
    return settings.embedding_models(), ({chat.model_id: chat} if chat is not None else {})


__all__ = ["parse_experiment_request", "check_request_space", "request_overrides", "golden_instance_id",
           "models_from_settings", "MAX_EVALS_LIMIT"]
