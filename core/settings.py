"""Deployment settings, read from the environment in this one place.

| variable | meaning | default |
| --- | --- | --- |
| ``RAGTUNE_OUT_DIR`` | output folder for reports, caches and the Milvus Lite database | ``ragtune-out`` |
| ``RAGTUNE_EMBEDDING_PROVIDER`` | ``local`` (a model shipped in a package, see ``core.models.local``), ``openai`` (any OpenAI-compatible endpoint) or ``azure`` (Azure OpenAI) | ``local`` |
| ``RAGTUNE_EMBEDDING_MODEL`` | model name (Azure: deployment name; local: ``bge-small-en-v1.5`` or ``all-MiniLM-L6-v2``) | ``text-embedding-3-small``; local: ``bge-small-en-v1.5`` |
| ``RAGTUNE_EMBEDDING_BASE_URL`` | endpoint (``http://localhost:11434/v1`` for Ollama; Azure: ``https://<resource>.openai.azure.com``) | client default |
| ``RAGTUNE_EMBEDDING_API_KEY`` | key (falls back to ``OPENAI_API_KEY``, or ``AZURE_OPENAI_API_KEY`` for azure) | none |
| ``RAGTUNE_EMBEDDING_DIMENSIONS`` | ask the endpoint for this many dimensions | model default |
| ``RAGTUNE_EMBEDDING_API_VERSION`` | Azure OpenAI API version | ``2024-10-21`` |
| ``RAGTUNE_RERANK_PROVIDER`` | ``local`` (the packaged cross-encoder), ``cohere``, ``jina``, ``vllm`` (``POST {base}/rerank`` with ``documents``), ``tei`` (with ``texts``) or ``none`` | ``local`` |
| ``RAGTUNE_RERANK_MODEL`` | rerank model name (local: ``ms-marco-MiniLM-L-12-v2``) | local: ``ms-marco-MiniLM-L-12-v2``; endpoints: required |
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
| ``RAGTUNE_STORAGE_CONNECTION`` | Azure Storage connection string for Blob and Queue (falls back to ``AzureWebJobsStorage``) | none |
| ``RAGTUNE_STORAGE_CONNECTION__blobServiceUri`` / ``__queueServiceUri`` | identity-based connection instead (the Functions host's own convention): the account's Blob and Queue endpoints, reached with Microsoft Entra ID | unset |
| ``RAGTUNE_STORAGE_CONNECTION__clientId`` | client id of the user-assigned managed identity for that connection | system identity / ``DefaultAzureCredential`` |
| ``RAGTUNE_GOLDEN_CONTAINER`` | Blob container whose golden files are checked on upload | ``golden`` |
| ``RAGTUNE_GOLDEN_MAX_BYTES`` | largest golden file, in bytes, that ``POST /api/golden/check`` and the golden blob trigger check (a larger one gets a failed check saying the limit) | ``20971520`` (20 MiB) |
| ``RAGTUNE_GOLDEN_TRIGGER_SOURCE`` | how the golden blob trigger hears of uploads: ``EventGrid`` (Flex Consumption requires it) or ``LogsAndContainerScan`` (polling, for ``func start`` with Azurite); read when the app is indexed | ``EventGrid`` |
| ``RAGTUNE_EVALUATIONS_QUEUE`` | queue of configurations to evaluate | ``evaluations`` |
| ``RAGTUNE_EVALUATION_TIMEOUT_S`` | time budget of one evaluation, in seconds (below the function timeout of ``host.json``); a round of evaluations waits at most ``EVALUATION_DELIVERIES * (this + EVALUATION_VISIBILITY_S)`` | ``1500`` |
| ``RAGTUNE_PARALLEL_EVALUATIONS`` | evaluations enqueued per round of the experiment orchestrator | ``8`` |
| ``RAGTUNE_SEARCH_ENDPOINT`` | the Azure AI Search service of ``--target azure-search:INDEX`` (``https://<service>.search.windows.net``) | unset |
| ``RAGTUNE_SEARCH_API_KEY`` | an Azure AI Search query key; without it targets authenticate with Microsoft Entra ID (``DefaultAzureCredential``) | none |
| ``RAGTUNE_TARGETS`` | the targets an evaluation may name: a targets file's path, or its YAML / JSON text (see ``core.targets.spec``) | none |
| ``RAGTUNE_PG_DSN`` or ``RAGTUNE_PG_HOST`` / ``_PORT`` / ``_USER`` / ``_PASSWORD`` / ``_DB`` / ``_SCHEMA`` | PostgreSQL with pgvector (see ``PGVectorConfig.from_env``) | ``127.0.0.1:5432``, user ``postgres``, database ``postgres``, schema ``public`` |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from core.errors import ConfigError


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
    pgvector: Any = None
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
    golden_max_bytes: int = GOLDEN_MAX_BYTES
    evaluations_queue: str = "evaluations"
    evaluation_timeout_s: int = DEFAULT_EVALUATION_TIMEOUT_S
    parallel_evaluations: int = DEFAULT_PARALLEL_EVALUATIONS
    storage_blob_uri: str | None = None
    storage_queue_uri: str | None = None
    storage_client_id: str | None = None
    local_embedding_model: str | None = None
    rerank_provider: str = "local"
    rerank_model: str | None = None
    rerank_base_url: str | None = None
    rerank_api_key: str | None = None
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
                  "search_api_key"}  # PGVectorConfig hides its own password
        parts = [
            f"{k}={'***' if k in hidden and v else v!r}" for k, v in self.__dict__.items()
        ]
        return f"Settings({', '.join(parts)})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> "Settings":
        """Read the settings from ``env`` (default ``os.environ``).

        Raises:
            ConfigError: an unknown provider, a non-integer dimension count, an evaluation
                timeout or golden size limit that is not a positive integer, or a number of
                parallel evaluations out of range (names the variable).
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
            golden_max_bytes=int(golden_max_raw),
            evaluations_queue=(env.get("RAGTUNE_EVALUATIONS_QUEUE") or "").strip() or "evaluations",
            evaluation_timeout_s=int(timeout_raw),
            parallel_evaluations=int(parallel_raw),
            storage_blob_uri=(env.get("RAGTUNE_STORAGE_CONNECTION__blobServiceUri") or "").strip() or None,
            storage_queue_uri=(env.get("RAGTUNE_STORAGE_CONNECTION__queueServiceUri") or "").strip() or None,
            storage_client_id=(env.get("RAGTUNE_STORAGE_CONNECTION__clientId") or "").strip() or None,
            local_embedding_model=((env.get("RAGTUNE_EMBEDDING_MODEL") or "").strip() or None) if provider == "local" else None,
            rerank_provider=rerank_provider,
            rerank_model=(env.get("RAGTUNE_RERANK_MODEL") or "").strip() or None,
            rerank_base_url=(env.get("RAGTUNE_RERANK_BASE_URL") or "").strip() or None,
            rerank_api_key=env.get("RAGTUNE_RERANK_API_KEY") or None,
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

    def configured_targets(self) -> dict[str, Any]:
        """The targets ``RAGTUNE_TARGETS`` configures, by name (``TargetSpec`` objects); empty
        when it is unset. A value that names an existing file is read as a targets file, any
        other as the file's text.

        Raises:
            ConfigError: the file or text is not a valid targets file (says where).
        """
        if not self.targets_config:
            return {}
        from core.targets.spec import parse_targets_text, read_targets_file

        text = self.targets_config
        if "\n" not in text and not text.lstrip().startswith(("[", "{", "-")) and Path(text).is_file():
            specs = read_targets_file(text)
        else:
            specs = parse_targets_text(text, "RAGTUNE_TARGETS")
        return {s.name: s for s in specs}

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

    def storage_access(self, address: str) -> dict[str, Any]:
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

    def files(self, address: str) -> Any:
        """The ``Files`` store at ``address`` (see ``core.reports.open_files``), reached as
        :meth:`storage_access` says. Nothing is contacted.

        Raises:
            ConfigError: an address ``open_files`` does not accept.
        """
        from core.reports import open_files

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

        from core.reports.blob import http_options

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

    def report_store(self) -> Any:
        """Return the ``ReportStore`` at ``RAGTUNE_REPORTS`` (Blob addresses use
        ``RAGTUNE_STORAGE_CONNECTION``). Nothing is contacted here.

        Raises:
            ConfigError: an address :func:`core.reports.open_files` does not accept.
        """
        from core.reports import report_store

        return report_store(self.files(self.reports or self.out_dir))

    def embedding_model(self) -> Any:
        """Return the configured ``EmbeddingModel`` (not yet loaded or called).

        Raises:
            ConfigError: ``azure`` without an endpoint.
        """
        from core.models import OpenAIEmbeddingModel
        from core.models.local import DEFAULT_LOCAL_EMBEDDING, local_embedding_model

        if self.embedding_provider == "local":
            return local_embedding_model(self.local_embedding_model or DEFAULT_LOCAL_EMBEDDING)
        if self.embedding_provider == "azure" and not self.embedding_base_url:
            raise ConfigError("RAGTUNE_EMBEDDING_PROVIDER=azure needs RAGTUNE_EMBEDDING_BASE_URL or AZURE_OPENAI_ENDPOINT")
        return OpenAIEmbeddingModel(
            self.embedding_model_name, base_url=self.embedding_base_url, api_key=self.embedding_api_key,
            dimensions=self.embedding_dimensions,
            azure_api_version=self.embedding_api_version if self.embedding_provider == "azure" else None,
        )

    def embedding_models(self) -> dict[str, Any]:
        """Every embedding model these settings can reach, by model id: the configured one
        first, then each installed local model (none loaded yet). A search space or
        ``evaluate --embedding-model`` may name any of them.

        Raises:
            ConfigError: as :meth:`embedding_model`.
        """
        from core.models.local import installed_local_embedding_models, local_embedding_model

        configured = self.embedding_model()
        out = {configured.model_id: configured}
        for name in installed_local_embedding_models():
            if name not in out:
                out[name] = local_embedding_model(name)
        return out

    def reranker(self) -> Any:
        """Return the configured ``Reranker``, or None for ``RAGTUNE_RERANK_PROVIDER=none``.

        Raises:
            ConfigError: an unknown local model, an endpoint without a base URL or model.
        """
        from core.models.local import DEFAULT_LOCAL_RERANKER, local_reranker
        from core.models.rerank import HttpReranker

        if self.rerank_provider == "none":
            return None
        if self.rerank_provider == "local":
            return local_reranker(self.rerank_model or DEFAULT_LOCAL_RERANKER)
        if not self.rerank_model:
            raise ConfigError(f"RAGTUNE_RERANK_PROVIDER={self.rerank_provider} needs RAGTUNE_RERANK_MODEL")
        if not self.rerank_base_url:
            raise ConfigError(f"RAGTUNE_RERANK_PROVIDER={self.rerank_provider} needs RAGTUNE_RERANK_BASE_URL")
        return HttpReranker(self.rerank_model, base_url=self.rerank_base_url, provider=self.rerank_provider,
                            api_key=self.rerank_api_key)

    def chat_model(self) -> Any:
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

    def judge_model(self, name: str | None = None) -> Any:
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

    def chat_model_named(self, name: str) -> Any:
        """Return the ``OpenAIChatModel`` for model ``name`` on the chat endpoint
        (``RAGTUNE_CHAT_BASE_URL``, its key and provider).

        Raises:
            ConfigError: azure without an endpoint.
        """
        return self._chat(name, self.chat_base_url, self.chat_api_key)

    def _chat(self, model: str, base_url: str | None, api_key: str | None) -> Any:
        from core.models.chat import OpenAIChatModel

        if self.chat_provider == "azure":
            if not base_url:
                raise ConfigError("RAGTUNE_CHAT_PROVIDER=azure needs RAGTUNE_CHAT_BASE_URL or AZURE_OPENAI_ENDPOINT")
            return OpenAIChatModel(model, base_url=base_url, api_key=api_key, azure_api_version=self.chat_api_version)
        return OpenAIChatModel(model, base_url=base_url, api_key=api_key)

    def vector_store_configs(self, out_dir: str | Path) -> dict[str, Any]:
        """Every backend that can be configured from the environment, by name: ``milvus-lite``
        and ``pgvector`` always (PostgreSQL from ``RAGTUNE_PG_*`` or its defaults), ``milvus``
        when ``RAGTUNE_MILVUS_URI`` is set. A search space may list several of them."""
        names = ["milvus-lite", "pgvector"] + (["milvus"] if self.milvus_uri else [])
        return {name: self.vector_store_config(out_dir, name) for name in names}

    def vector_store_config(self, out_dir: str | Path, backend: str | None = None) -> Any:
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
        return MilvusLiteConfig(self.milvus_lite_path or str(Path(out_dir) / "milvus.db"))
