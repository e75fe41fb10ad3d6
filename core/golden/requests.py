"""Template and suggestion requests over addresses: what ``POST /api/golden/template`` and
``POST /api/golden/suggest`` do, kept out of the Functions app.

Request bodies (JSON objects)::

    {"documents": "https://<account>.blob.core.windows.net/docs/hr",   # or s3://bucket/prefix
     "golden": "https://<account>.blob.core.windows.net/golden/hr/golden.jsonl",
     "by": "page",    # optional: "page" (default) or "doc"
     "n": 50,         # template only: rows (1..1000, default 50)
     "seed": 0,       # template only: >= 0 (default 0)
     "top": 1}        # suggest only: ids per question (1..20, default 1)

Addresses follow the rules of experiment requests
(:func:`core.experiment.requests.parse_experiment_request` with ``remote_only``: the app's own
Blob storage, no query string or user info), and each must be in a container meant for it
(:func:`container_problem`): ``documents`` in the documents container
(``RAGTUNE_DOCUMENTS_CONTAINER``) or the golden container (``RAGTUNE_GOLDEN_CONTAINER``),
``golden`` in the golden container. No other container of the account (the task hub's,
``azure-webjobs-secrets``, ``$logs``, the reports) is read or written, and ``s3://`` addresses
are refused (nothing says which buckets are the app's). For a template, ``golden`` names the
golden file to be (it need not exist); for a suggestion, the golden file to read. The result is
written beside it, as ``<stem>.template.jsonl`` or ``<stem>.suggested.jsonl``, and never over a
file that exists.
"""

from __future__ import annotations

import posixpath
import tempfile
from typing import TYPE_CHECKING, Any, Sequence

from core.documents import load_documents
from core.errors import ConfigError
from core.evaluation.indexing import cached_model
from core.experiment.requests import parse_experiment_request
from core.golden.passages import GRAINS
from core.golden.reader import read_bytes
from core.golden.suggest import DEFAULT_TOP, build_index, suggest_labels
from core.golden.template import DEFAULT_TEMPLATE_ROWS, rows_to_jsonl, template_rows
from core.workspace import Workspace

if TYPE_CHECKING:
    from core.settings import Settings

#: The request kinds and the suffix of the file each writes beside the golden file.
OUTPUT_SUFFIXES = {"template": ".template.jsonl", "suggest": ".suggested.jsonl"}
#: Most template rows a request may ask for.
MAX_TEMPLATE_ROWS = 1000
#: Most ids per question a suggestion request may ask for.
MAX_TOP = 20
_FIELDS = {"template": ("documents", "golden", "by", "n", "seed"), "suggest": ("documents", "golden", "by", "top")}


class OutputExistsError(ConfigError):
    """The file a request would write exists already (it is never overwritten).

    Attributes:
        address: the file's address.
    """

    def __init__(self, message: str, address: str) -> None:
        super().__init__(message)
        self.address = address


def _integer(body: dict[str, Any], name: str, default: int, low: int, high: int, errors: list[str]) -> int:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        errors.append(f"{name!r} must be an integer from {low} to {high}, got {value!r}"[:300])
        return default
    return value


def container_problem(name: str, address: str, blob_endpoint: str | None,
                      allowed: Sequence[tuple[str, str]]) -> str | None:
    """Why the address of field ``name`` is not in one of the ``allowed`` containers, or None.

    The container is read from the address as ``core.reports.open_files`` reads it: the first
    segment below the Blob endpoint, after percent-decoding (``%2F`` is a ``/``; a backslash is
    read as ``/``, as store keys read it), empty segments skipped. An address with a ``.`` or
    ``..`` segment is refused whatever its container, so no spelling reaches another one.

    Args:
        name: the field (``"documents"``, ``"golden"``), for the message.
        address: an address already accepted by ``parse_experiment_request`` (``remote_only``).
        blob_endpoint: the app's Blob endpoint (``Settings.blob_endpoint()``).
        allowed: ``(container, setting)`` pairs, ``("golden", "RAGTUNE_GOLDEN_CONTAINER")``.

    Returns:
        A message naming the field and every allowed container's URL and setting, or None.
    """
    from urllib.parse import unquote

    endpoint = (blob_endpoint or "").rstrip("/")
    if not endpoint:
        where = " or ".join(f"container {container!r} ({setting})" for container, setting in allowed)
        return (f"{name!r} must be in the app's Blob storage, in {where}, but no Blob storage is configured "
                "(RAGTUNE_STORAGE_CONNECTION)")
    where = " or ".join(f"{endpoint}/{container}/ ({setting})" for container, setting in allowed)
    refused = f"{name!r} must be in the app's Blob storage below {where}"
    if not address.lower().startswith(endpoint.lower() + "/"):
        return f"{refused}: other addresses are not read or written here"
    segments = [s for s in unquote(address[len(endpoint) + 1:]).replace("\\", "/").split("/") if s]
    if any(s in (".", "..") for s in segments):
        return f"{refused}, without '.' or '..' segments"
    if not segments or segments[0] not in {container for container, _ in allowed}:
        found = repr(segments[0][:63]) if segments else "none"
        return f"{refused}, not in container {found}: no other container of the account is read or written here"
    return None


def parse_golden_request(body: Any, kind: str, *, blob_endpoint: str | None, golden_container: str,
                         documents_container: str) -> tuple[dict[str, Any] | None, list[str]]:
    """Validate a template or suggestion request.

    Args:
        body: the parsed JSON.
        kind: ``"template"`` or ``"suggest"``.
        blob_endpoint: the app's Blob endpoint (None refuses every http(s) address).
        golden_container: the golden container (``Settings.golden_container``): ``golden`` and
            the file written beside it must be there.
        documents_container: the documents container (``Settings.documents_container``):
            ``documents`` must be there or in the golden container.

    Returns:
        ``(request, errors)``: the request with defaults filled in and ``output`` (the address
        to write), or None and every problem found.
    """
    if not isinstance(body, dict):
        return None, ["the body must be a JSON object"]
    fields = _FIELDS[kind]
    errors = [f"unknown field {k!r} (known: {', '.join(fields)})" for k in body if k not in fields]
    _, address_errors = parse_experiment_request({k: body.get(k) for k in ("golden", "documents")},
                                                 remote_only=True, blob_endpoint=blob_endpoint)
    errors += address_errors
    golden_only = [(golden_container, "RAGTUNE_GOLDEN_CONTAINER")]
    allowed = {"documents": [(documents_container, "RAGTUNE_DOCUMENTS_CONTAINER"), *golden_only],
               "golden": golden_only}
    for name in ("documents", "golden"):
        value = body.get(name)
        if isinstance(value, str) and not any(e.startswith(f"{name!r}") for e in address_errors):
            problem = container_problem(name, value.strip(), blob_endpoint, allowed[name])
            if problem:
                errors.append(problem)
    by = body.get("by", "page")
    if by not in GRAINS:
        errors.append(f"'by' must be one of {', '.join(GRAINS)}, got {by!r}"[:300])
    request: dict[str, Any] = {"documents": str(body.get("documents") or "").strip(),
                               "golden": str(body.get("golden") or "").strip(), "by": by}
    if kind == "template":
        request["n"] = _integer(body, "n", DEFAULT_TEMPLATE_ROWS, 1, MAX_TEMPLATE_ROWS, errors)
        request["seed"] = _integer(body, "seed", 0, 0, 2**32 - 1, errors)
    else:
        request["top"] = _integer(body, "top", DEFAULT_TOP, 1, MAX_TOP, errors)
    golden = request["golden"]
    if not errors and (golden.endswith("/") or not posixpath.basename(golden)):
        errors.append("'golden' must name a file, not a folder")
    if errors:
        return None, errors
    request["output"] = output_address(golden, kind)
    return request, []


def output_address(golden: str, kind: str) -> str:
    """The address of the file written beside ``golden``: ``<stem>.template.jsonl`` or
    ``<stem>.suggested.jsonl`` (the stem is the name without ``.jsonl``)."""
    folder, name = golden.rsplit("/", 1)
    stem = name[: -len(".jsonl")] if name.lower().endswith(".jsonl") else name
    return f"{folder}/{stem}{OUTPUT_SUFFIXES[kind]}"


def run_golden_request(request: dict[str, Any], kind: str, settings: Settings) -> dict[str, Any]:
    """Build the template or the suggestions of a request and write them beside the golden file.

    Args:
        request: from :func:`parse_golden_request`.
        kind: ``"template"`` or ``"suggest"``.
        settings: the app's ``core.settings.Settings``.

    Returns:
        ``{"address": the file written, "rows": rows written, ...counts}``.

    Raises:
        OutputExistsError: the output exists already (nothing is written).
        GoldenError: the golden file cannot be read or has errors (suggest).
        DocumentError / StoreError / IndexingError: the documents cannot be read or indexed.
    """
    output = request["output"]
    folder, name = output.rsplit("/", 1)
    files = settings.files(folder)
    if files.exists(name):
        raise OutputExistsError(f"{output} exists already: it is never overwritten", output)
    with tempfile.TemporaryDirectory(prefix="ragtune-golden-") as tmp:
        workspace = Workspace.at(tmp)  # a scratch workspace, dropped with the folder
        loaded = load_documents(request["documents"], cache_dir=workspace.inputs,
                                **settings.storage_access(request["documents"]))
        if kind == "template":
            rows = template_rows(loaded.documents, by=request["by"], n=request["n"], seed=request["seed"])
            answer: dict[str, Any] = {"rows": len(rows), "templates": len(rows)}
        else:
            data = read_bytes(request["golden"], **settings.storage_access(request["golden"]))
            model = cached_model(settings.embedding_model(), workspace)
            with build_index(loaded.documents, model, settings.vector_store_config(tmp)) as index:
                result = suggest_labels(request["golden"], loaded.documents, index=index, top=request["top"],
                                        by=request["by"], data=data)
            rows = result.rows
            answer = {"rows": len(rows), "suggested": result.n_suggested, "kept": result.n_kept,
                      "without_reference": result.n_without_reference, "format": result.format,
                      "summary": result.summary()}
    if files.exists(name):
        raise OutputExistsError(f"{output} exists already: it is never overwritten", output)
    files.write_bytes(name, rows_to_jsonl(rows))
    return {"address": output, **answer,
            "skipped": [{"document_id": s.document_id, "reason": s.reason} for s in loaded.skipped]}
