"""Deployment settings, read from the environment in this one place.

| variable | meaning | default |
| --- | --- | --- |
| ``RAGTUNE_OUT_DIR`` | output folder for reports, caches and the Milvus Lite database | ``ragtune-out`` |
| ``RAGTUNE_EMBEDDING_PROVIDER`` | ``local`` (a model shipped in a package, see ``core.models.local``), ``openai`` (any OpenAI-compatible endpoint) or ``azure`` (Azure OpenAI) | ``local`` |
| ``RAGTUNE_EMBEDDING_MODEL`` | model name (Azure: deployment name; local: ``bge-small-en-v1.5``, ``all-MiniLM-L6-v2``, ``hf:ORG/NAME[@REVISION]`` or ``onnx:PATH``, see ``core.models.local``) | ``text-embedding-3-small``; local: ``bge-small-en-v1.5`` |
| ``RAGTUNE_EMBEDDING_BASE_URL`` | endpoint (``http://localhost:11434/v1`` for Ollama; Azure: ``https://<resource>.openai.azure.com``) | client default |
| ``RAGTUNE_EMBEDDING_API_KEY`` | key (falls back to ``OPENAI_API_KEY``, or ``AZURE_OPENAI_API_KEY`` for azure) | none |
| ``RAGTUNE_EMBEDDING_DIMENSIONS`` | ask the endpoint for this many dimensions | model default |
| ``RAGTUNE_EMBEDDING_API_VERSION`` | Azure OpenAI API version | ``2024-10-21`` |
| ``RAGTUNE_RERANK_PROVIDER`` | ``local`` (the packaged cross-encoder), ``cohere``, ``jina``, ``vllm`` (``POST {base}/rerank`` with ``documents``), ``tei`` (with ``texts``) or ``none`` | ``local`` |
| ``RAGTUNE_RERANK_MODEL`` | rerank model name (local: ``ms-marco-MiniLM-L-12-v2``, ``hf:ORG/NAME[@REVISION]`` or ``onnx:PATH``) | local: ``ms-marco-MiniLM-L-12-v2``; endpoints: required |
| ``RAGTUNE_ALLOW_MODEL_DOWNLOAD`` | ``1`` / ``true`` / ``yes``: an ``hf:`` model missing from the Hugging Face cache is downloaded into it (once); else such a model is an error saying how to allow it, and nothing is downloaded | off |
| ``RAGTUNE_RERANK_BASE_URL`` / ``RAGTUNE_RERANK_API_KEY`` | the rerank endpoint's base and key (sent as a bearer token) | none |
| ``RAGTUNE_VECTOR_STORE`` | ``milvus-lite``, ``milvus`` or ``pgvector`` | ``milvus`` when ``RAGTUNE_MILVUS_URI`` is set, else ``milvus-lite`` |
| ``RAGTUNE_MILVUS_LITE_PATH`` | the Milvus Lite database (a ``.db`` folder) | ``<output folder>/milvus.db`` |
| ``RAGTUNE_MILVUS_URI`` | a Milvus server (``http://host:19530``) | unset |
| ``RAGTUNE_MILVUS_TOKEN`` | Milvus token (``user:password`` or API key) | none |
| ``RAGTUNE_MILVUS_DB`` | Milvus database name | default database |
| ``RAGTUNE_CHAT_PROVIDER`` | ``openai`` (any OpenAI-compatible endpoint) or ``azure``; unset: answers come from the extractive baseline | unset |
| ``RAGTUNE_CHAT_MODEL`` | chat model name (Azure: deployment name) | none |
| ``RAGTUNE_CHAT_BASE_URL`` | chat endpoint (Azure: ``https://<resource>.openai.azure.com``) | client default |
| ``RAGTUNE_CHAT_API_KEY`` | chat key (falls back to ``OPENAI_API_KEY`` / ``AZURE_OPENAI_API_KEY``) | none |
| ``RAGTUNE_CHAT_API_VERSION`` | Azure OpenAI API version for chat | ``2024-10-21`` |
| ``RAGTUNE_JUDGE_MODEL`` | model that judges answers (same endpoint as chat unless ``RAGTUNE_JUDGE_BASE_URL``) | none: no judge |
| ``RAGTUNE_JUDGE_BASE_URL`` / ``RAGTUNE_JUDGE_API_KEY`` | the judge's own endpoint and key | the chat ones |
| ``RAGTUNE_REPORTS`` | report store address (a folder, ``s3://bucket/prefix`` or a Blob URL; see ``core.reports.open_files``) | ``RAGTUNE_OUT_DIR`` |
| ``RAGTUNE_BRANCH`` | the branch ``evaluate`` records in its report and takes ``--baseline latest`` from (``--branch`` overrides it); unset: the CI's own variable, the first set of ``GITHUB_HEAD_REF`` (a pull request's branch), ``GITHUB_REF_NAME``, ``CI_COMMIT_REF_NAME`` (GitLab), ``BUILD_SOURCEBRANCHNAME`` (Azure Pipelines) | none |
| ``RAGTUNE_STORAGE_CONNECTION`` | Azure Storage connection string for Blob and Queue (falls back to ``AzureWebJobsStorage``) | none |
| ``RAGTUNE_STORAGE_CONNECTION__blobServiceUri`` / ``__queueServiceUri`` | identity-based connection instead (the Functions host's own convention): the account's Blob and Queue endpoints, reached with Microsoft Entra ID | unset |
| ``RAGTUNE_STORAGE_CONNECTION__clientId`` | client id of the user-assigned managed identity for that connection | system identity / ``DefaultAzureCredential`` |
| ``RAGTUNE_GOLDEN_CONTAINER`` | Blob container whose golden files are checked on upload | ``golden`` |
| ``RAGTUNE_DOCUMENTS_CONTAINER`` | Blob container of documents; ``POST /api/golden/template`` and ``/api/golden/suggest`` read documents only from it or the golden container, and read and write golden files only in the golden container | ``documents`` |
| ``RAGTUNE_GOLDEN_MAX_BYTES`` | largest golden file, in bytes, that ``POST /api/golden/check`` and the golden blob trigger check (a larger one gets a failed check saying the limit) | ``20971520`` (20 MiB) |
| ``RAGTUNE_GOLDEN_TRIGGER_SOURCE`` | how the golden blob trigger hears of uploads: ``EventGrid`` (Flex Consumption requires it) or ``LogsAndContainerScan`` (polling, for ``func start`` with Azurite); read when the app is indexed | ``EventGrid`` |
| ``RAGTUNE_EVALUATIONS_QUEUE`` | queue of configurations to evaluate | ``evaluations`` |
| ``RAGTUNE_EVALUATION_TIMEOUT_S`` | time budget of one evaluation, in seconds (below the function timeout of ``host.json``); a round of evaluations waits at most ``EVALUATION_DELIVERIES * (this + EVALUATION_VISIBILITY_S)`` | ``1500`` |
| ``RAGTUNE_PARALLEL_EVALUATIONS`` | evaluations enqueued per round of the experiment orchestrator | ``8`` |
| ``RAGTUNE_SEARCH_ENDPOINT`` | the Azure AI Search service of ``--target azure-search:INDEX`` (``https://<service>.search.windows.net``) | unset |
| ``RAGTUNE_SEARCH_API_KEY`` | an Azure AI Search query key; without it targets authenticate with Microsoft Entra ID (``DefaultAzureCredential``) | none |
| ``RAGTUNE_TARGETS`` | the targets an evaluation may name: a targets file's path, or its YAML / JSON text (see ``core.targets.spec``) | none |
| ``RAGTUNE_PG_DSN`` or ``RAGTUNE_PG_HOST`` / ``_PORT`` / ``_USER`` / ``_PASSWORD`` / ``_DB`` / ``_SCHEMA`` | PostgreSQL with pgvector (see ``PGVectorConfig.from_env``) | ``127.0.0.1:5432``, user ``postgres``, database ``postgres``, schema ``public`` |
| ``RAGTUNE_APP_URL`` | the deployed RAG app ``ragtune evaluate-app`` asks (its config file or ``--url`` may name it instead) | unset |
| ``RAGTUNE_APP_API_KEY`` / ``RAGTUNE_APP_KEY_HEADER`` | a key sent to the app in that header (``Authorization`` gets ``Bearer <key>``) | none / ``api-key`` |
| ``RAGTUNE_APP_SCOPE`` | without a key: a Microsoft Entra ID scope (``api://<app id>/.default``) whose bearer token ``DefaultAzureCredential`` gets for the app | unset: no auth header |
| ``RAGTUNE_APP_CONCURRENCY`` | app requests in flight at once (conversations run side by side, the turns of one in order) | ``4`` |
| ``RAGTUNE_APP_REQUESTS_PER_MINUTE`` | most requests started per minute (0: no limit) | ``0`` |
| ``RAGTUNE_APP_TIMEOUT_S`` / ``RAGTUNE_APP_DEADLINE_S`` | seconds one request may take; seconds the whole run may take (0: none), after which unsent questions fail with the reason | ``60`` / ``0`` |
| ``RAGTUNE_APP_MAX_ATTEMPTS`` | attempts per request (429, 5xx, timeouts and lost connections are retried, honouring ``Retry-After``) | ``5`` |
| ``RAGTUNE_APP_STOP_AFTER`` | failed requests in a row after which the run stops asking (the rest fail with the reason; what was scored is kept) | ``10`` |
| ``RAGTUNE_PRICES`` / ``RAGTUNE_PRICES_FILE`` | prices per model for ``--dry-run``: JSON (inline, or a JSON or YAML file) ``{"<model>": {"input": USD per 1M prompt tokens, "output": USD per 1M completion tokens}}`` | none: tokens without a cost |
| ``RAGTUNE_DOCUMENT_MAX_BYTES`` | largest document file, in bytes; a larger one is skipped (not downloaded from S3 or Blob) | ``67108864`` (64 MiB) |
| ``RAGTUNE_DOCUMENT_MAX_UNPACKED_BYTES`` | largest sum of a DOCX's (any ZIP-based file's) parts unpacked, in bytes | ``268435456`` (256 MiB) |
| ``RAGTUNE_DOCUMENT_MAX_INFLATE_RATIO`` | largest expansion of one part of a ZIP-based file (unpacked bytes per packed byte) | ``100`` |
| ``RAGTUNE_DOCUMENT_MAX_PAGES`` | most pages of a PDF, read before its text | ``5000`` |
| ``RAGTUNE_DOCUMENT_MAX_CHARS`` | most characters of a document's extracted text | ``20000000`` |
| ``RAGTUNE_ENDPOINT_DEADLINE_S`` | total time of one request to an embedding, chat or rerank endpoint, in seconds, however slowly its reply arrives | ``300`` |

The defaults of the document limits and of the endpoint deadline, and why they are what they
are, are in :mod:`core.limits`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from core.errors import ConfigError
from core.limits import ENDPOINT_DEADLINE_S, DocumentLimits
from core.reports import open_files, report_store
from core.reports.blob import http_options
from core.workspace import Workspace

# The models and vector stores are imported where the settings build them: the Functions app
# imports this module when it starts, and tests/functions/test_app.py keeps them out of that.

if TYPE_CHECKING:
    from core.models.chat import ChatModel, OpenAIChatModel
    from core.models.embeddings import EmbeddingModel
    from core.models.rerank import Reranker
    from core.reports.files import Files, StoreAccess
    from core.reports.store import ReportStore
    from core.vectorstores.factory import StoreConfig
    from core.vectorstores.pgvector import PGVectorConfig


#: Deliveries of an evaluation message before it goes to the poison queue (``host.json``
#: ``maxDequeueCount``), and the seconds a failed delivery stays invisible (``visibilityTimeout``).
EVALUATION_DELIVERIES = 3
EVALUATION_VISIBILITY_S = 60
#: Default time budget of one evaluation, in seconds (``host.json``'s ``functionTimeout`` is 1800).
DEFAULT_EVALUATION_TIMEOUT_S = 1500
#: Default evaluations per round of the experiment orchestrator.
DEFAULT_PARALLEL_EVALUATIONS = 8
#: Most evaluations per round (each is a queue message and an event in the round's history).
MAX_PARALLEL_EVALUATIONS = 64
#: Default of ``RAGTUNE_GOLDEN_MAX_BYTES``: the largest golden file checked by the Functions app.
GOLDEN_MAX_BYTES = 20 * 1024 * 1024

#: Values of ``RAGTUNE_GOLDEN_TRIGGER_SOURCE``.
GOLDEN_TRIGGER_SOURCES = ("EventGrid", "LogsAndContainerScan")


#: ``RAGTUNE_DOCUMENT_MAX_*`` variables and the ``DocumentLimits`` field each sets.
DOCUMENT_LIMIT_VARIABLES = {
    "RAGTUNE_DOCUMENT_MAX_BYTES": "max_bytes",
    "RAGTUNE_DOCUMENT_MAX_UNPACKED_BYTES": "max_unpacked_bytes",
    "RAGTUNE_DOCUMENT_MAX_INFLATE_RATIO": "max_inflate_ratio",
    "RAGTUNE_DOCUMENT_MAX_PAGES": "max_pages",
    "RAGTUNE_DOCUMENT_MAX_CHARS": "max_chars",
}


def _positive(env: Mapping[str, str], name: str, *, whole: bool) -> float | int | None:
    """The positive number in variable ``name`` (a whole one when ``whole``), or None when unset.

    Raises:
        ConfigError: a value that is not such a number (names the variable).
    """
    raw = (env.get(name) or "").strip().replace("_", "")
    if not raw:
        return None
    try:
        value: float | int = int(raw) if whole else float(raw)
    except ValueError:
        value = 0
    if not value > 0 or value == float("inf"):
        kind = "a positive integer" if whole else "a positive number"
        raise ConfigError(f"{name} must be {kind}, got {env.get(name)!r}")
    return value


def document_limits(env: Mapping[str, str] | None = None) -> DocumentLimits:
    """The limits every document is held to (``RAGTUNE_DOCUMENT_MAX_*``; the defaults are
    :class:`core.limits.DocumentLimits`'s). Only these variables are read, so loading
    documents does not depend on the rest of the settings.

    Raises:
        ConfigError: a variable that is not a positive number (whole, except the ratio).
    """
    env = os.environ if env is None else env
    given = {}
    for name, field_name in DOCUMENT_LIMIT_VARIABLES.items():
        value = _positive(env, name, whole=field_name != "max_inflate_ratio")
        if value is not None:
            given[field_name] = value
    return DocumentLimits(**given)


def endpoint_deadline_s(env: Mapping[str, str] | None = None) -> float:
    """The total time of one request to a model endpoint, in seconds
    (``RAGTUNE_ENDPOINT_DEADLINE_S``; default :data:`core.limits.ENDPOINT_DEADLINE_S`).

    Raises:
        ConfigError: a value that is not a positive number.
    """
    env = os.environ if env is None else env
    value = _positive(env, "RAGTUNE_ENDPOINT_DEADLINE_S", whole=False)
    return float(value) if value is not None else ENDPOINT_DEADLINE_S


def golden_trigger_source(env: Mapping[str, str] | None = None) -> str:
    """The golden blob trigger's source, ``RAGTUNE_GOLDEN_TRIGGER_SOURCE``: ``EventGrid``
    (default; the Flex Consumption plan supports only this) or ``LogsAndContainerScan`` (the
    polling trigger, for local runs with Azurite). Read when the Functions app is indexed.

    Raises:
        ConfigError: another value.
    """
    env = os.environ if env is None else env
    value = (env.get("RAGTUNE_GOLDEN_TRIGGER_SOURCE") or "").strip() or "EventGrid"
    if value not in GOLDEN_TRIGGER_SOURCES:
        raise ConfigError(f"RAGTUNE_GOLDEN_TRIGGER_SOURCE must be {' or '.join(GOLDEN_TRIGGER_SOURCES)}, got {value!r}")
    return value


#: Defaults of the deployed app's client (``RAGTUNE_APP_*``).
DEFAULT_APP_CONCURRENCY = 4
DEFAULT_APP_TIMEOUT_S = 60.0
DEFAULT_APP_MAX_ATTEMPTS = 5
DEFAULT_APP_STOP_AFTER = 10
DEFAULT_APP_KEY_HEADER = "api-key"
#: Most app requests in flight at once.
MAX_APP_CONCURRENCY = 64


def _number(env: Mapping[str, str], name: str, default: float, *, low: float, high: float | None = None,
            whole: bool = False) -> float:
    """``env[name]`` as a number in ``[low, high]`` (a whole one when ``whole``), or ``default``.

    Raises:
        ConfigError: naming the variable, when the value is not such a number.
    """
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not (value >= low and (high is None or value <= high)) or (whole and not value.is_integer()):
        span = f"from {low:g} to {high:g}" if high is not None else f"at least {low:g}"
        raise ConfigError(f"{name} must be {'a whole number' if whole else 'a number'} {span}, got {raw!r}")
    return int(value) if whole else value


@dataclass(frozen=True)
class AppSettings:
    """How ``ragtune evaluate-app`` reaches a deployed RAG app (``RAGTUNE_APP_*``; see the
    module docstring). The key is held here but never shown: ``repr`` hides it.

    Attributes:
        url: the app's endpoint, or None (the config file or ``--url`` names it).
        api_key: a key for the app, or None.
        key_header: the header the key goes in (``Authorization`` gets ``Bearer <key>``).
        scope: a Microsoft Entra ID scope whose bearer token is sent when there is no key.
        concurrency: requests in flight at once (>= 1).
        requests_per_minute: most requests started per minute; 0 for no limit.
        timeout_s: seconds one request may take.
        deadline_s: seconds the whole run may take; 0 for none.
        max_attempts: attempts per request, the first included (>= 1).
        stop_after: failed requests in a row after which no more are sent (>= 1).
    """

    url: str | None = None
    api_key: str | None = None
    key_header: str = DEFAULT_APP_KEY_HEADER
    scope: str | None = None
    concurrency: int = DEFAULT_APP_CONCURRENCY
    requests_per_minute: float = 0.0
    timeout_s: float = DEFAULT_APP_TIMEOUT_S
    deadline_s: float = 0.0
    max_attempts: int = DEFAULT_APP_MAX_ATTEMPTS
    stop_after: int = DEFAULT_APP_STOP_AFTER

    def __repr__(self) -> str:
        parts = [f"{k}={'***' if k == 'api_key' and v else v!r}" for k, v in self.__dict__.items()]
        return f"AppSettings({', '.join(parts)})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "AppSettings":
        """Read ``RAGTUNE_APP_*`` from ``env`` (default ``os.environ``).

        Raises:
            ConfigError: a number out of range, or a header name HTTP cannot carry (names
                the variable).
        """
        env = os.environ if env is None else env
        header = (env.get("RAGTUNE_APP_KEY_HEADER") or "").strip() or DEFAULT_APP_KEY_HEADER
        if not header.isascii() or any(c in header for c in " :\r\n\t"):
            raise ConfigError(f"RAGTUNE_APP_KEY_HEADER must be an HTTP header name, got {header!r}")
        return cls(
            url=(env.get("RAGTUNE_APP_URL") or "").strip() or None,
            api_key=env.get("RAGTUNE_APP_API_KEY") or None,
            key_header=header,
            scope=(env.get("RAGTUNE_APP_SCOPE") or "").strip() or None,
            concurrency=int(_number(env, "RAGTUNE_APP_CONCURRENCY", DEFAULT_APP_CONCURRENCY, low=1,
                                    high=MAX_APP_CONCURRENCY, whole=True)),
            requests_per_minute=float(_number(env, "RAGTUNE_APP_REQUESTS_PER_MINUTE", 0.0, low=0)),
            timeout_s=float(_number(env, "RAGTUNE_APP_TIMEOUT_S", DEFAULT_APP_TIMEOUT_S, low=0.001)),
            deadline_s=float(_number(env, "RAGTUNE_APP_DEADLINE_S", 0.0, low=0)),
            max_attempts=int(_number(env, "RAGTUNE_APP_MAX_ATTEMPTS", DEFAULT_APP_MAX_ATTEMPTS, low=1, high=100,
                                     whole=True)),
            stop_after=int(_number(env, "RAGTUNE_APP_STOP_AFTER", DEFAULT_APP_STOP_AFTER, low=1, whole=True)),
        )


@dataclass(frozen=True)
class ModelPrice:
    """What a model costs, in US dollars per million tokens.

    Attributes:
        input_per_1m: per million prompt tokens.
        output_per_1m: per million completion tokens.
    """

    input_per_1m: float
    output_per_1m: float


def read_prices(env: Mapping[str, str] | None = None) -> dict[str, ModelPrice]:
    """The price table: ``RAGTUNE_PRICES`` (inline JSON), else the JSON or YAML file
    ``RAGTUNE_PRICES_FILE``; ``{}`` when neither is set. Each entry is
    ``"<model>": {"input": USD per 1M prompt tokens, "output": USD per 1M completion tokens}``;
    a model is looked up by its name (``gpt-4o-mini``) or its full id (``openai:host/gpt-4o-mini``).

    Raises:
        ConfigError: the text is not such a table, or the file cannot be read (names the
            variable, the file and the model).
    """
    env = os.environ if env is None else env
    inline = (env.get("RAGTUNE_PRICES") or "").strip()
    path = (env.get("RAGTUNE_PRICES_FILE") or "").strip()
    if not inline and not path:
        return {}
    where = "RAGTUNE_PRICES"
    if not inline:
        where = f"RAGTUNE_PRICES_FILE {path}"
        try:
            inline = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"{where} cannot be read: {exc.strerror or exc}") from None
    import yaml  # JSON is YAML too

    try:
        table = yaml.safe_load(inline)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where} is not JSON or YAML: {exc}") from None
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must map model names to {{\"input\": ..., \"output\": ...}}")
    out = {}
    for model, price in table.items():
        ok = isinstance(price, dict) and set(price) <= {"input", "output"} and all(
            isinstance(price.get(k), (int, float)) and not isinstance(price.get(k), bool) and price.get(k) >= 0
            for k in ("input", "output"))
        if not ok:
            raise ConfigError(f"{where}: model {model!r} needs {{\"input\": USD per 1M prompt tokens, \"output\": "
                              f"USD per 1M completion tokens}} (numbers, 0 or more), got {price!r}")
        out[str(model)] = ModelPrice(float(price["input"]), float(price["output"]))
    return out


def _flag(env: Mapping[str, str], name: str) -> bool:
    """The on/off variable ``name``: ``1``, ``true``, ``yes``, ``on`` or ``0``, ``false``,
    ``no``, ``off``, empty (any case); unset is off.

    Raises:
        ConfigError: another value (names the variable).
    """
    value = (env.get(name) or "").strip().lower()
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("", "0", "false", "no", "off"):
        return False
    raise ConfigError(f"{name} must be 1 or 0 (true/false, yes/no), got {value!r}")


#: Where a run's branch is read from, first set first (``RAGTUNE_BRANCH``, then the CI's own).
BRANCH_VARIABLES = ("RAGTUNE_BRANCH", "GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME",
                    "BUILD_SOURCEBRANCHNAME")
#: Longest branch name kept (Git allows longer; none is that long in practice).
MAX_BRANCH_CHARS = 255


def ci_branch(env: Mapping[str, str] | None = None) -> str | None:
    """The branch a run is on, from the first of :data:`BRANCH_VARIABLES` that is set and not
    blank (``GITHUB_HEAD_REF`` is set only for pull requests, where ``GITHUB_REF_NAME`` is
    ``<n>/merge``), or None.

    Raises:
        ConfigError: as :func:`branch_name`, naming the variable.
    """
    env = os.environ if env is None else env
    for name in BRANCH_VARIABLES:
        value = (env.get(name) or "").strip()
        if value:
            return branch_name(value, name)
    return None


def branch_name(value: str, where: str) -> str:
    """``value`` stripped, checked as a branch name.

    Args:
        value: the name.
        where: what gave it (``--branch``, a variable), for the message.

    Raises:
        ConfigError: empty, longer than :data:`MAX_BRANCH_CHARS`, or holding a control character.
    """
    value = value.strip()
    if not value or len(value) > MAX_BRANCH_CHARS or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise ConfigError(f"{where} is not a branch name (1 to {MAX_BRANCH_CHARS} characters, no control characters)")
    return value


@dataclass(frozen=True)
class Settings:
    """Settings from the environment (see the module docstring for each variable).

    Secrets (API keys, tokens) are held here but never printed: ``repr`` hides them.
    """

    out_dir: str = "ragtune-out"
    embedding_provider: str = "local"
    embedding_model_name: str = "text-embedding-3-small"
    embedding_base_url: str | None = None
    embedding_api_key: str | None = None
    embedding_dimensions: int | None = None
    embedding_api_version: str = "2024-10-21"
    milvus_uri: str | None = None
    milvus_token: str | None = None
    milvus_db: str = ""
    milvus_lite_path: str | None = None
    vector_store: str = "milvus-lite"
    pgvector: PGVectorConfig | None = None
    chat_provider: str | None = None
    chat_model_name: str | None = None
    chat_base_url: str | None = None
    chat_api_key: str | None = None
    chat_api_version: str = "2024-10-21"
    judge_model_name: str | None = None
    judge_base_url: str | None = None
    judge_api_key: str | None = None
    reports: str = ""
    storage_connection: str | None = None
    golden_container: str = "golden"
    documents_container: str = "documents"
    golden_max_bytes: int = GOLDEN_MAX_BYTES
    evaluations_queue: str = "evaluations"
    evaluation_timeout_s: int = DEFAULT_EVALUATION_TIMEOUT_S
    parallel_evaluations: int = DEFAULT_PARALLEL_EVALUATIONS
    storage_blob_uri: str | None = None
    storage_queue_uri: str | None = None
    storage_client_id: str | None = None
    local_embedding_model: str | None = None
    allow_model_download: bool = False
    rerank_provider: str = "local"
    rerank_model: str | None = None
    rerank_base_url: str | None = None
    rerank_api_key: str | None = None
    document_limits: DocumentLimits = DocumentLimits()
    endpoint_deadline_s: float = ENDPOINT_DEADLINE_S
    app: AppSettings = field(default_factory=AppSettings)
    prices: dict[str, ModelPrice] = field(default_factory=dict)
    search_endpoint: str | None = None
    search_api_key: str | None = None
    targets_config: str | None = None

    @property
    def round_timeout_s(self) -> int:
        """The longest wait for one round of evaluations, in seconds: every delivery of an
        evaluation message may use its whole budget and then stay invisible before the next,
        ``EVALUATION_DELIVERIES * (evaluation_timeout_s + EVALUATION_VISIBILITY_S)``."""
        return EVALUATION_DELIVERIES * (self.evaluation_timeout_s + EVALUATION_VISIBILITY_S)

    def __repr__(self) -> str:
        hidden = {"embedding_api_key", "rerank_api_key", "milvus_token", "chat_api_key", "judge_api_key", "storage_connection",
                  "search_api_key"}  # AppSettings hides its own key; PGVectorConfig hides its own password
        parts = [
            f"{k}={'***' if k in hidden and v else v!r}" for k, v in self.__dict__.items()
        ]
        return f"Settings({', '.join(parts)})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        """Read the settings from ``env`` (default ``os.environ``).

        Raises:
            ConfigError: an unknown provider, a non-integer dimension count, an evaluation
                timeout or golden size limit that is not a positive integer, a number of
                parallel evaluations out of range, or a document limit or endpoint deadline
                that is not a positive number (names the variable).
        """
        env = os.environ if env is None else env
        provider = env.get("RAGTUNE_EMBEDDING_PROVIDER", "local").strip().lower() or "local"
        if provider not in ("local", "openai", "azure"):
            raise ConfigError(f"RAGTUNE_EMBEDDING_PROVIDER must be local, openai or azure, got {provider!r}")
        dims_raw = env.get("RAGTUNE_EMBEDDING_DIMENSIONS", "").strip()
        if dims_raw and not dims_raw.isdigit():
            raise ConfigError(f"RAGTUNE_EMBEDDING_DIMENSIONS must be a positive integer, got {dims_raw!r}")
        key = env.get("RAGTUNE_EMBEDDING_API_KEY") or (
            env.get("AZURE_OPENAI_API_KEY") if provider == "azure" else env.get("OPENAI_API_KEY")
        )
        from core.vectorstores.factory import BACKENDS
        from core.vectorstores.pgvector import PGVectorConfig

        milvus_uri = env.get("RAGTUNE_MILVUS_URI") or None
        backend = (env.get("RAGTUNE_VECTOR_STORE") or ("milvus" if milvus_uri else "milvus-lite")).strip().lower()
        if backend not in BACKENDS:
            raise ConfigError(f"RAGTUNE_VECTOR_STORE must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if backend == "milvus" and not milvus_uri:
            raise ConfigError("RAGTUNE_VECTOR_STORE=milvus needs RAGTUNE_MILVUS_URI (for example http://127.0.0.1:19530)")
        chat_provider = (env.get("RAGTUNE_CHAT_PROVIDER") or "").strip().lower() or None
        if chat_provider not in (None, "openai", "azure"):
            raise ConfigError(f"RAGTUNE_CHAT_PROVIDER must be openai or azure, got {chat_provider!r}")
        chat_key = env.get("RAGTUNE_CHAT_API_KEY") or (
            env.get("AZURE_OPENAI_API_KEY") if chat_provider == "azure" else env.get("OPENAI_API_KEY")
        )
        chat_url = env.get("RAGTUNE_CHAT_BASE_URL") or (env.get("AZURE_OPENAI_ENDPOINT") if chat_provider == "azure" else None)
        timeout_raw = (env.get("RAGTUNE_EVALUATION_TIMEOUT_S") or "").strip() or str(DEFAULT_EVALUATION_TIMEOUT_S)
        if not timeout_raw.isdigit() or int(timeout_raw) < 1:
            raise ConfigError(f"RAGTUNE_EVALUATION_TIMEOUT_S must be a positive integer (seconds), got {timeout_raw!r}")
        parallel_raw = (env.get("RAGTUNE_PARALLEL_EVALUATIONS") or "").strip() or str(DEFAULT_PARALLEL_EVALUATIONS)
        if not parallel_raw.isdigit() or not 1 <= int(parallel_raw) <= MAX_PARALLEL_EVALUATIONS:
            raise ConfigError(f"RAGTUNE_PARALLEL_EVALUATIONS must be an integer from 1 to {MAX_PARALLEL_EVALUATIONS}, "
                              f"got {parallel_raw!r}")
        golden_max_raw = (env.get("RAGTUNE_GOLDEN_MAX_BYTES") or "").strip() or str(GOLDEN_MAX_BYTES)
        if not golden_max_raw.isdigit() or int(golden_max_raw) < 1:
            raise ConfigError(f"RAGTUNE_GOLDEN_MAX_BYTES must be a positive integer (bytes), got {golden_max_raw!r}")
        out_dir = (env.get("RAGTUNE_OUT_DIR") or "").strip() or "ragtune-out"
        from core.models.rerank import RERANK_PROVIDERS

        rerank_provider = (env.get("RAGTUNE_RERANK_PROVIDER") or "").strip().lower() or "local"
        if rerank_provider not in RERANK_PROVIDERS:
            raise ConfigError(f"RAGTUNE_RERANK_PROVIDER must be one of {', '.join(RERANK_PROVIDERS)}, got {rerank_provider!r}")
        base_url = env.get("RAGTUNE_EMBEDDING_BASE_URL") or (env.get("AZURE_OPENAI_ENDPOINT") if provider == "azure" else None)
        return cls(
            out_dir=out_dir,
            embedding_provider=provider,
            embedding_model_name=env.get("RAGTUNE_EMBEDDING_MODEL", "text-embedding-3-small"),
            embedding_base_url=base_url or None,
            embedding_api_key=key or None,
            embedding_dimensions=int(dims_raw) if dims_raw else None,
            embedding_api_version=env.get("RAGTUNE_EMBEDDING_API_VERSION", "2024-10-21"),
            milvus_uri=milvus_uri,
            milvus_token=env.get("RAGTUNE_MILVUS_TOKEN") or None,
            milvus_db=env.get("RAGTUNE_MILVUS_DB", ""),
            milvus_lite_path=(env.get("RAGTUNE_MILVUS_LITE_PATH") or "").strip() or None,
            vector_store=backend,
            pgvector=PGVectorConfig.from_env(env),
            chat_provider=chat_provider,
            chat_model_name=(env.get("RAGTUNE_CHAT_MODEL") or "").strip() or None,
            chat_base_url=chat_url or None,
            chat_api_key=chat_key or None,
            chat_api_version=env.get("RAGTUNE_CHAT_API_VERSION") or "2024-10-21",
            judge_model_name=(env.get("RAGTUNE_JUDGE_MODEL") or "").strip() or None,
            judge_base_url=env.get("RAGTUNE_JUDGE_BASE_URL") or None,
            judge_api_key=env.get("RAGTUNE_JUDGE_API_KEY") or None,
            reports=(env.get("RAGTUNE_REPORTS") or "").strip() or out_dir,
            storage_connection=(env.get("RAGTUNE_STORAGE_CONNECTION") or env.get("AzureWebJobsStorage") or "").strip() or None,
            golden_container=(env.get("RAGTUNE_GOLDEN_CONTAINER") or "").strip() or "golden",
            documents_container=(env.get("RAGTUNE_DOCUMENTS_CONTAINER") or "").strip() or "documents",
            golden_max_bytes=int(golden_max_raw),
            evaluations_queue=(env.get("RAGTUNE_EVALUATIONS_QUEUE") or "").strip() or "evaluations",
            evaluation_timeout_s=int(timeout_raw),
            parallel_evaluations=int(parallel_raw),
            storage_blob_uri=(env.get("RAGTUNE_STORAGE_CONNECTION__blobServiceUri") or "").strip() or None,
            storage_queue_uri=(env.get("RAGTUNE_STORAGE_CONNECTION__queueServiceUri") or "").strip() or None,
            storage_client_id=(env.get("RAGTUNE_STORAGE_CONNECTION__clientId") or "").strip() or None,
            local_embedding_model=((env.get("RAGTUNE_EMBEDDING_MODEL") or "").strip() or None) if provider == "local" else None,
            allow_model_download=_flag(env, "RAGTUNE_ALLOW_MODEL_DOWNLOAD"),
            rerank_provider=rerank_provider,
            rerank_model=(env.get("RAGTUNE_RERANK_MODEL") or "").strip() or None,
            rerank_base_url=(env.get("RAGTUNE_RERANK_BASE_URL") or "").strip() or None,
            rerank_api_key=env.get("RAGTUNE_RERANK_API_KEY") or None,
            document_limits=document_limits(env),
            endpoint_deadline_s=endpoint_deadline_s(env),
            app=AppSettings.from_env(env),
            prices=read_prices(env),
            search_endpoint=(env.get("RAGTUNE_SEARCH_ENDPOINT") or "").strip() or None,
            search_api_key=(env.get("RAGTUNE_SEARCH_API_KEY") or "").strip() or None,
            targets_config=(env.get("RAGTUNE_TARGETS") or "").strip() or None,
        )

    def search_credential(self, auth: str = "default") -> Any:
        """The credential of an Azure AI Search target: ``AzureKeyCredential`` with
        ``RAGTUNE_SEARCH_API_KEY`` for ``auth`` ``key`` (or ``default`` when a key is set), else
        ``DefaultAzureCredential`` (Microsoft Entra ID). Nothing is contacted here.

        Raises:
            ConfigError: ``auth`` is ``key`` but no key is set.
        """
        if auth == "key" or (auth == "default" and self.search_api_key):
            if not self.search_api_key:
                raise ConfigError("an Azure AI Search target with auth: key needs RAGTUNE_SEARCH_API_KEY")
            from azure.core.credentials import AzureKeyCredential

            return AzureKeyCredential(self.search_api_key)
        from azure.identity import DefaultAzureCredential

        return DefaultAzureCredential()

    def storage_credential(self) -> Any:
        """The Microsoft Entra ID credential for an identity-based storage connection:
        ``DefaultAzureCredential`` (managed identity ``RAGTUNE_STORAGE_CONNECTION__clientId``
        when set). Nothing is contacted here."""
        from azure.identity import DefaultAzureCredential

        if self.storage_client_id:
            return DefaultAzureCredential(managed_identity_client_id=self.storage_client_id)
        return DefaultAzureCredential()

    def blob_address(self, container: str, name: str = "") -> str:
        """The address of blob ``name`` (or of the ``container`` itself) in the storage account
        of ``RAGTUNE_STORAGE_CONNECTION``: ``<Blob endpoint>/<container>[/<name>]``
        (``http://127.0.0.1:10000/devstoreaccount1/...`` for Azurite), the name percent-encoded
        (``what?.jsonl`` -> ``what%3F.jsonl``). Nothing is contacted.

        Raises:
            ConfigError: no storage connection is set.
        """
        if self.storage_connection:
            from azure.storage.blob import BlobServiceClient

            try:
                endpoint = BlobServiceClient.from_connection_string(self.storage_connection).url
            except ValueError as exc:
                raise ConfigError(f"RAGTUNE_STORAGE_CONNECTION is not a valid connection string: {exc}") from None
        elif self.storage_blob_uri:
            endpoint = self.storage_blob_uri
        else:
            raise ConfigError("no storage for blobs: set RAGTUNE_STORAGE_CONNECTION (a connection string) or "
                              "RAGTUNE_STORAGE_CONNECTION__blobServiceUri (identity-based)")
        from urllib.parse import quote

        endpoint = endpoint.split("?", 1)[0].rstrip("/")
        return f"{endpoint}/{quote(container)}" + (f"/{quote(name.lstrip('/'), safe='/')}" if name else "")

    def blob_endpoint(self) -> str | None:
        """The storage account's Blob endpoint (``https://<account>.blob.core.windows.net``, or
        ``http://127.0.0.1:10000/devstoreaccount1`` for Azurite), or None when no storage
        connection is set. Nothing is contacted."""
        try:
            return self.blob_address("x").rsplit("/", 1)[0]
        except ConfigError:
            return None

    def shown_locations(self) -> dict[str, str]:
        """The places these settings point at, each with the name an answer over HTTP gives it
        instead of its path or URL (``core.redaction.without_locations``): the report store,
        the working folder (``RAGTUNE_OUT_DIR``, absolute too) and the storage account's Blob
        endpoint. Nothing is contacted."""
        named = {self.reports: "the report store", self.out_dir: "the app's working folder",
                 str(Path(self.out_dir).resolve()): "the app's working folder"}
        if not self.reports.lower().startswith(("http://", "https://", "s3://", "file:")):
            named[str(Path(self.reports).resolve())] = "the report store"
        endpoint = self.blob_endpoint()
        if endpoint:
            named[endpoint] = "the app's storage"
        return {location: name for location, name in named.items() if location}

    def storage_access(self, address: str) -> StoreAccess:
        """Keyword arguments for ``core.reports.open_files`` to reach ``address`` with this
        storage connection: none when the URL carries a SAS query string (it is the
        credential), else ``connection_string`` when one is set, else, for an ``https://``
        address with an identity-based connection, ``credential`` (:meth:`storage_credential`).
        Nothing is contacted."""
        from urllib.parse import urlsplit

        text = str(address).strip()
        if text.lower().startswith(("http://", "https://")) and urlsplit(text).query:
            return {}
        if self.storage_connection:
            return {"connection_string": self.storage_connection}
        if text.lower().startswith("https://") and (self.storage_client_id or self.storage_blob_uri):
            return {"credential": self.storage_credential()}
        return {}

    def files(self, address: str) -> Files:
        """The ``Files`` store at ``address`` (see ``core.reports.open_files``), reached as
        :meth:`storage_access` says. Nothing is contacted.

        Raises:
            ConfigError: an address ``open_files`` does not accept.
        """
        return open_files(address, **self.storage_access(address))

    def queue_client(self, name: str) -> Any:
        """An ``azure.storage.queue.QueueClient`` for queue ``name`` whose messages are Base64
        encoded, as the Functions queue trigger expects (``host.json`` ``messageEncoding``).

        Uses ``RAGTUNE_STORAGE_CONNECTION`` (or ``AzureWebJobsStorage``) when it is a connection
        string, else ``RAGTUNE_STORAGE_CONNECTION__queueServiceUri`` with
        :meth:`storage_credential`. Nothing is contacted here.

        Raises:
            ConfigError: neither is set.
        """
        from azure.storage.queue import BinaryBase64DecodePolicy, BinaryBase64EncodePolicy, QueueClient

        policies = {"message_encode_policy": BinaryBase64EncodePolicy(),
                    "message_decode_policy": BinaryBase64DecodePolicy()}
        if self.storage_connection:
            url = QueueClient.from_connection_string(self.storage_connection, name).url
            return QueueClient.from_connection_string(self.storage_connection, name, **policies, **http_options(url))
        if self.storage_queue_uri:
            return QueueClient(self.storage_queue_uri, name, credential=self.storage_credential(), **policies,
                               **http_options(self.storage_queue_uri))
        raise ConfigError("no storage for queues: set RAGTUNE_STORAGE_CONNECTION (a connection string) or "
                          "RAGTUNE_STORAGE_CONNECTION__queueServiceUri (identity-based)")

    def report_store(self) -> ReportStore:
        """Return the ``ReportStore`` at ``RAGTUNE_REPORTS`` (Blob addresses use
        ``RAGTUNE_STORAGE_CONNECTION``). Nothing is contacted here.

        Raises:
            ConfigError: an address :func:`core.reports.open_files` does not accept.
        """
        return report_store(self.files(self.reports or self.out_dir))

    def embedding_model(self) -> EmbeddingModel:
        """Return the configured ``EmbeddingModel`` (not yet loaded or called).

        Raises:
            ConfigError: ``azure`` without an endpoint, or a local model ``RAGTUNE_EMBEDDING_MODEL``
                names that cannot be built (the message starts with the variable's name).
        """
        from core.models import OpenAIEmbeddingModel
        from core.models.local import DEFAULT_LOCAL_EMBEDDING, local_embedding_model

        if self.embedding_provider == "local":
            try:
                return local_embedding_model(self.local_embedding_model or DEFAULT_LOCAL_EMBEDDING,
                                             allow_download=self.allow_model_download)
            except ConfigError as exc:
                raise ConfigError(f"RAGTUNE_EMBEDDING_MODEL: {exc}" if self.local_embedding_model else str(exc)) from None
        if self.embedding_provider == "azure" and not self.embedding_base_url:
            raise ConfigError("RAGTUNE_EMBEDDING_PROVIDER=azure needs RAGTUNE_EMBEDDING_BASE_URL or AZURE_OPENAI_ENDPOINT")
        return OpenAIEmbeddingModel(
            self.embedding_model_name, base_url=self.embedding_base_url, api_key=self.embedding_api_key,
            dimensions=self.embedding_dimensions,
            azure_api_version=self.embedding_api_version if self.embedding_provider == "azure" else None,
            deadline_s=self.endpoint_deadline_s,
        )

    def embedding_models(self, names: Sequence[str] = ()) -> dict[str, EmbeddingModel]:
        """Every embedding model these settings can reach, by model id: the configured one
        first, then each installed local model, then each of ``names`` not among them (an
        ``hf:`` or ``onnx:`` name, keyed as written); none is loaded yet. A search space or
        ``evaluate --embedding-model`` may name any of them.

        Raises:
            ConfigError: as :meth:`embedding_model`, or a name of ``names`` that
                :meth:`embedding_model_named` refuses.
        """
        from core.models.local import installed_local_embedding_models, local_embedding_model

        configured = self.embedding_model()
        out = {configured.model_id: configured}
        for name in installed_local_embedding_models():
            if name not in out:
                out[name] = local_embedding_model(name)
        for name in names:
            if name not in out and f"local:{name}" not in out:
                out[name] = self.embedding_model_named(name)
        return out

    def embedding_model_named(self, name: str) -> EmbeddingModel:
        """The embedding model ``name`` names (``local:NAME``, ``hf:ORG/NAME[@REVISION]`` or
        ``onnx:PATH``; see ``core.models.local``), downloading an ``hf:`` model only when
        ``RAGTUNE_ALLOW_MODEL_DOWNLOAD`` allows it (on first use).

        Raises:
            ConfigError: an unknown name or kind of name (the message lists the forms), or a
                model that cannot be built (packages missing, an unusable folder).
        """
        from core.models.local import local_embedding_model

        return local_embedding_model(name, allow_download=self.allow_model_download)

    def reranker(self) -> Reranker | None:
        """Return the configured ``Reranker``, or None for ``RAGTUNE_RERANK_PROVIDER=none``.

        Raises:
            ConfigError: an unknown local model or one that cannot be built (the message starts
                with ``RAGTUNE_RERANK_MODEL:`` when that names it), an endpoint without a base
                URL or model.
        """
        from core.models.local import DEFAULT_LOCAL_RERANKER, local_reranker
        from core.models.rerank import HttpReranker

        if self.rerank_provider == "none":
            return None
        if self.rerank_provider == "local":
            try:
                return local_reranker(self.rerank_model or DEFAULT_LOCAL_RERANKER, allow_download=self.allow_model_download)
            except ConfigError as exc:
                raise ConfigError(f"RAGTUNE_RERANK_MODEL: {exc}" if self.rerank_model else str(exc)) from None
        if not self.rerank_model:
            raise ConfigError(f"RAGTUNE_RERANK_PROVIDER={self.rerank_provider} needs RAGTUNE_RERANK_MODEL")
        if not self.rerank_base_url:
            raise ConfigError(f"RAGTUNE_RERANK_PROVIDER={self.rerank_provider} needs RAGTUNE_RERANK_BASE_URL")
        return HttpReranker(self.rerank_model, base_url=self.rerank_base_url, provider=self.rerank_provider,
                            api_key=self.rerank_api_key, deadline_s=self.endpoint_deadline_s)

    def rerankers(self, names: Sequence[str] = ()) -> dict[str, Reranker]:
        """The configured reranker (none for ``RAGTUNE_RERANK_PROVIDER=none``) and the
        cross-encoder each of ``names`` names (``local:NAME``, ``hf:ORG/NAME[@REVISION]``,
        ``onnx:PATH``; ``none`` is skipped), by model id (a name as written); none is loaded.

        Raises:
            ConfigError: as :meth:`reranker`, or an unknown name or kind of name.
        """
        from core.models.local import local_reranker

        configured = self.reranker()
        out = {configured.model_id: configured} if configured is not None else {}
        for name in names:
            if name != "none" and name not in out and f"local:{name}" not in out:
                out[name] = local_reranker(name, allow_download=self.allow_model_download)
        return out

    def chat_model(self) -> ChatModel | None:
        """Return the configured ``OpenAIChatModel``, or None when ``RAGTUNE_CHAT_PROVIDER``
        is unset (answers then come from the extractive baseline).

        Raises:
            ConfigError: a provider without ``RAGTUNE_CHAT_MODEL``, or azure without an endpoint.
        """
        if self.chat_provider is None:
            return None
        if not self.chat_model_name:
            raise ConfigError(f"RAGTUNE_CHAT_PROVIDER={self.chat_provider} needs RAGTUNE_CHAT_MODEL")
        return self._chat(self.chat_model_name, self.chat_base_url, self.chat_api_key)

    def judge_model(self, name: str | None = None) -> ChatModel | None:
        """Return the judge ``OpenAIChatModel`` for model ``name`` (default
        ``RAGTUNE_JUDGE_MODEL``), on ``RAGTUNE_JUDGE_BASE_URL`` or the chat endpoint; None when
        no judge is named.

        Raises:
            ConfigError: azure without an endpoint.
        """
        name = name or self.judge_model_name
        if not name:
            return None
        return self._chat(name, self.judge_base_url or self.chat_base_url, self.judge_api_key or self.chat_api_key)

    def chat_model_named(self, name: str) -> ChatModel:
        """Return the ``OpenAIChatModel`` for model ``name`` on the chat endpoint
        (``RAGTUNE_CHAT_BASE_URL``, its key and provider).

        Raises:
            ConfigError: azure without an endpoint.
        """
        return self._chat(name, self.chat_base_url, self.chat_api_key)

    def _chat(self, model: str, base_url: str | None, api_key: str | None) -> OpenAIChatModel:
        from core.models.chat import OpenAIChatModel

        if self.chat_provider == "azure":
            if not base_url:
                raise ConfigError("RAGTUNE_CHAT_PROVIDER=azure needs RAGTUNE_CHAT_BASE_URL or AZURE_OPENAI_ENDPOINT")
            return OpenAIChatModel(model, base_url=base_url, api_key=api_key, azure_api_version=self.chat_api_version,
                                   deadline_s=self.endpoint_deadline_s)
        return OpenAIChatModel(model, base_url=base_url, api_key=api_key, deadline_s=self.endpoint_deadline_s)

    def vector_store_configs(self, out_dir: str | Path) -> dict[str, StoreConfig]:
        """Every backend that can be configured from the environment, by name: ``milvus-lite``
        and ``pgvector`` always (PostgreSQL from ``RAGTUNE_PG_*`` or its defaults), ``milvus``
        when ``RAGTUNE_MILVUS_URI`` is set. A search space may list several of them."""
        names = ["milvus-lite", "pgvector"] + (["milvus"] if self.milvus_uri else [])
        return {name: self.vector_store_config(out_dir, name) for name in names}

    def vector_store_config(self, out_dir: str | Path, backend: str | None = None) -> StoreConfig:
        """Return the configuration of ``backend`` (default ``RAGTUNE_VECTOR_STORE``):
        ``MilvusLiteConfig`` for ``RAGTUNE_MILVUS_LITE_PATH`` or ``<out_dir>/milvus.db``, ``MilvusConfig`` from
        ``RAGTUNE_MILVUS_*``, or ``PGVectorConfig`` from ``RAGTUNE_PG_*``.

        Raises:
            ConfigError: an unknown backend, or ``milvus`` without ``RAGTUNE_MILVUS_URI``.
        """
        from core.vectorstores import BACKENDS, MilvusConfig, MilvusLiteConfig

        backend = backend or self.vector_store
        if backend not in BACKENDS:
            raise ConfigError(f"vector store must be one of {', '.join(BACKENDS)}, got {backend!r}")
        if backend == "milvus":
            if not self.milvus_uri:
                raise ConfigError("the milvus vector store needs RAGTUNE_MILVUS_URI (for example http://127.0.0.1:19530)")
            return MilvusConfig(uri=self.milvus_uri, token=self.milvus_token or "", db_name=self.milvus_db)
        if backend == "pgvector":
            return self.pgvector
        return MilvusLiteConfig(self.milvus_lite_path or Workspace.at(out_dir).milvus_lite)
