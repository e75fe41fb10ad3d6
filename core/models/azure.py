"""OpenAI-compatible and Azure OpenAI clients; Azure with a key or with Microsoft Entra ID tokens.

Without a key, requests carry a bearer token for the Cognitive Services scope from
``azure.identity.DefaultAzureCredential`` (the app's managed identity when ``AZURE_CLIENT_ID``
names it, a developer's ``az login`` locally), so a deployment needs no API key at all; the
identity needs the *Cognitive Services OpenAI User* role on the Azure OpenAI resource.

References:
    Azure OpenAI, "How to configure Azure OpenAI with Microsoft Entra ID authentication":
    https://learn.microsoft.com/azure/ai-services/openai/how-to/managed-identity ;
    ``azure.identity.get_bearer_token_provider``:
    https://learn.microsoft.com/python/api/azure-identity/azure.identity#azure-identity-get-bearer-token-provider
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from azure.core.credentials import TokenCredential

__all__ = ["AZURE_OPENAI_SCOPE", "azure_openai_client", "openai_client", "token_provider"]

#: The Entra ID scope of Azure OpenAI (and every Azure AI services resource).
AZURE_OPENAI_SCOPE = "https://cognitiveservices.azure.com/.default"


def token_provider(credential: TokenCredential | None = None, scope: str = AZURE_OPENAI_SCOPE) -> Callable[[], str]:
    """Return a function giving a bearer token for ``scope``, refreshed as needed.

    Args:
        credential: an ``azure.core.credentials.TokenCredential``; default
            ``DefaultAzureCredential()``.
        scope: the Entra ID scope (default :data:`AZURE_OPENAI_SCOPE`; a deployed app's own is
            ``api://<application id>/.default``).
    """
    from azure.identity import DefaultAzureCredential, get_bearer_token_provider

    return get_bearer_token_provider(credential or DefaultAzureCredential(), scope)


def azure_openai_client(
    *,
    endpoint: str | None,
    api_key: str | None,
    api_version: str,
    timeout_s: float,
    ad_token_provider: Callable[[], str] | None = None,
) -> Any:
    """Return an ``openai.AzureOpenAI`` client with the client's own retries off.

    Args:
        endpoint: the resource endpoint, ``https://<resource>.openai.azure.com``.
        api_key: the key; None or empty authenticates with Entra ID tokens instead.
        api_version: the Azure OpenAI API version.
        timeout_s: per-request timeout in seconds.
        ad_token_provider: where tokens come from without a key (default :func:`token_provider`).
    """
    import openai

    auth: dict[str, Any] = (
        {"api_key": api_key} if api_key else {"azure_ad_token_provider": ad_token_provider or token_provider()}
    )
    return openai.AzureOpenAI(azure_endpoint=endpoint, api_version=api_version, timeout=timeout_s, max_retries=0,
                              **auth)


def openai_client(
    *,
    base_url: str | None,
    api_key: str | None,
    azure_api_version: str | None,
    timeout_s: float,
    ad_token_provider: Callable[[], str] | None = None,
) -> Any:
    """Return the client of an endpoint, with the client's own retries off (callers retry).

    Args:
        base_url: the endpoint: an OpenAI-compatible ``.../v1`` URL, or with
            ``azure_api_version`` the Azure OpenAI resource endpoint.
        api_key: the key; None or empty: ``"not-needed"`` for an OpenAI-compatible server,
            Entra ID tokens for Azure OpenAI (see :func:`azure_openai_client`).
        azure_api_version: the Azure OpenAI API version, or None for an OpenAI-compatible server.
        timeout_s: per-request timeout in seconds.
        ad_token_provider: where Azure tokens come from without a key.

    Returns:
        An ``openai.AzureOpenAI`` client with ``azure_api_version``, else an ``openai.OpenAI`` one.
    """
    if azure_api_version:
        return azure_openai_client(endpoint=base_url, api_key=api_key, api_version=azure_api_version,
                                   timeout_s=timeout_s, ad_token_provider=ad_token_provider)
    import openai

    return openai.OpenAI(base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0)
