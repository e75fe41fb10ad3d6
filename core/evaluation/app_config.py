"""How to ask a deployed RAG app and read its replies: a request template and a response mapping.

A deployed RAG chat app (App Service, Container Apps, any HTTP service) is asked one question
per request. The config says what to send and where to find the answer in what comes back; it
is a small YAML or JSON file (every key optional except what the app needs)::

    url: https://my-rag-app.azurewebsites.net/chat   # else RAGTUNE_APP_URL or --url
    request:                                         # the JSON body, with placeholders
      messages: ${messages}
      context:
        overrides: ${overrides}
      session_state: ${session}
    overrides: {top: 3, retrieval_mode: hybrid}      # what ${overrides} holds
    headers: {X-Client: ragtune}                     # more headers (not secrets)
    response:                                        # JMESPath expressions into the reply
      answer: message.content
      citations: 'context.citations[].{document: sourcefile, page: page}'
      contexts: context.data_points.text
      session: session_state
    citations_in_answer: '\\[([^\\]]+)\\]'           # citations written in the answer text
    citation_pattern: '^(?P<document>.+?)(?:#page=(?P<page>\\d+))?$'
    refusals: ["I don't know", "not in the (documents|sources)"]

Placeholders (``string.Template`` syntax; ``$$`` is a literal ``$``): a string that is exactly
``${name}`` is replaced by the value itself (a list, an object, null); inside a longer string
the value is written as text (JSON for what is not a string). Unknown names are an error.

- ``${question}``: the question; ``${question_id}``: its id; ``${turn}``: its turn (1 first).
- ``${messages}``: the conversation so far and the question, ``[{"role", "content"}, ...]``
  (the OpenAI chat shape); ``${history}``: the earlier turns alone (the app's own answers).
- ``${overrides}``: the config's ``overrides`` (``--override KEY=VALUE`` adds to them).
- ``${session}``: what ``response.session`` found in the previous turn's reply (null first), for
  an app that keeps the conversation's state itself.

Response mapping (JMESPath, https://jmespath.org/specification.html): ``answer`` must find a
string; ``citations`` a list of strings (read with ``citation_pattern``: named groups
``document`` and, optionally, ``page``) or of objects ``{document, page}``; ``contexts`` a list
of strings or of objects ``{text, document, page}`` (``context_pattern`` may split strings
such as ``"Benefits.pdf#page=3: text"`` with groups ``document``, ``page``, ``text``).
``citations_in_answer`` finds citations in the answer text with a regular expression (its
first group, or the whole match), after those ``citations`` found. An answer matching one of
``refusals`` (regular expressions, case-insensitive; a default list when not given) is counted
as a refusal.

References:
    Azure-Samples ai-rag-chat-evaluator (a request to the app and JMESPath into its reply):
    https://github.com/Azure-Samples/ai-rag-chat-evaluator ; the reply shape of
    azure-search-openai-demo (``message.content``, ``context.data_points``):
    https://github.com/Azure-Samples/azure-search-openai-demo ; JMESPath:
    https://jmespath.org/specification.html
"""

from __future__ import annotations

import json
import re
import string
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping, Sequence

from core.errors import ConfigError
from core.rag.records import Context

__all__ = [
    "AppConfig", "Citation", "DEFAULT_REFUSALS", "DEFAULT_REQUEST", "MappedReply", "PLACEHOLDERS", "load_app_config",
    "map_reply", "render_request",
]

#: The placeholders a request template may use.
PLACEHOLDERS: tuple[str, ...] = ("question", "question_id", "turn", "messages", "history", "overrides", "session")
#: The request sent when the config gives none: azure-search-openai-demo's ``/chat`` body.
DEFAULT_REQUEST: dict[str, Any] = {"messages": "${messages}", "context": {"overrides": "${overrides}"},
                                   "session_state": "${session}"}
#: The answer's JMESPath when the config gives none (azure-search-openai-demo's reply).
DEFAULT_ANSWER = "message.content"
#: How a citation string names a document and a page, when the config does not say.
DEFAULT_CITATION_PATTERN = r"^\s*(?P<document>.+?)(?:#page=(?P<page>\d+))?\s*$"
#: Answers that decline, as regular expressions (case-insensitive), when the config gives none.
DEFAULT_REFUSALS: tuple[str, ...] = (
    r"\bI (?:do not|don't|cannot|can't) (?:know|answer|find|help)",
    r"\b(?:not|no) (?:enough )?information\b",
    r"\b(?:is|are) not (?:in|mentioned in|covered (?:in|by)|found in|provided in) the (?:documents?|sources?|context)",
    r"\b(?:documents?|sources?|context) (?:do|does) not (?:contain|mention|say|include|cover)",
    r"\bunable to (?:answer|find)\b",
)
_KEYS = {"url", "request", "overrides", "headers", "response", "citations_in_answer", "citation_pattern",
         "context_pattern", "refusals"}
_RESPONSE_KEYS = {"answer", "citations", "contexts", "session"}
#: Characters of a reply shown when the mapping finds nothing in it.
REPLY_EXCERPT_CHARS = 200


@dataclass(frozen=True)
class AppConfig:
    """What to send to a deployed app and how to read its replies (see the module docstring).

    Attributes:
        url: the endpoint, or None (``RAGTUNE_APP_URL`` or ``--url`` must name it).
        request: the JSON body template.
        overrides: what ``${overrides}`` holds.
        headers: more headers sent with each request (never secrets: they are reported).
        answer: JMESPath of the answer.
        citations: JMESPath of the cited sources, or None.
        contexts: JMESPath of the retrieved passages, or None.
        session: JMESPath of the conversation state to send back, or None.
        citations_in_answer: regular expression finding citations in the answer text, or None.
        citation_pattern: regular expression reading a citation string (groups ``document``,
            ``page``).
        context_pattern: regular expression splitting a context string (groups ``text``,
            ``document``, ``page``), or None.
        refusals: regular expressions of answers that decline (case-insensitive).
        source: where the config came from (a file, or ``"flags"``), for messages.
    """

    url: str | None = None
    request: Any = field(default_factory=lambda: json.loads(json.dumps(DEFAULT_REQUEST)))
    overrides: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    answer: str = DEFAULT_ANSWER
    citations: str | None = None
    contexts: str | None = None
    session: str | None = None
    citations_in_answer: str | None = None
    citation_pattern: str = DEFAULT_CITATION_PATTERN
    context_pattern: str | None = None
    refusals: tuple[str, ...] = DEFAULT_REFUSALS
    source: str = "defaults"

    def __post_init__(self) -> None:
        _check_template(self.request, self.source)
        for name in ("answer", "citations", "contexts", "session"):
            _compile_path(getattr(self, name), f"{self.source}: response.{name}")
        for name in ("citations_in_answer", "citation_pattern", "context_pattern"):
            _compile_regex(getattr(self, name), f"{self.source}: {name}")
        for i, pattern in enumerate(self.refusals):
            _compile_regex(pattern, f"{self.source}: refusals[{i}]")
        for name, value in self.headers.items():
            if not isinstance(name, str) or not isinstance(value, str) or not name.isascii() or any(
                    c in name for c in " :\r\n") or any(c in value for c in "\r\n"):
                raise ConfigError(f"{self.source}: headers.{name}: a header is a name and a text on one line")
            if name.lower() in ("authorization", "api-key", "x-api-key", "ocp-apim-subscription-key"):
                raise ConfigError(f"{self.source}: headers.{name}: secrets come from the environment "
                                  "(RAGTUNE_APP_API_KEY with RAGTUNE_APP_KEY_HEADER, or RAGTUNE_APP_SCOPE), never "
                                  "from a config file that reports keep")

    def with_overrides(self, url: str | None = None, overrides: Mapping[str, Any] | None = None) -> "AppConfig":
        """This config with another ``url`` (when given) and ``overrides`` added to its own."""
        return replace(self, url=url or self.url, overrides={**self.overrides, **dict(overrides or {})})

    @property
    def has_citations(self) -> bool:
        """Whether replies are read for cited sources."""
        return bool(self.citations or self.citations_in_answer)

    def to_dict(self) -> dict[str, Any]:
        """The config as JSON (what a report keeps; it holds no secret)."""
        return {"url": self.url, "request": self.request, "overrides": dict(self.overrides),
                "headers": dict(self.headers),
                "response": {"answer": self.answer, "citations": self.citations, "contexts": self.contexts,
                             "session": self.session},
                "citations_in_answer": self.citations_in_answer, "citation_pattern": self.citation_pattern,
                "context_pattern": self.context_pattern, "refusals": list(self.refusals), "source": self.source}


def _compile_path(expression: str | None, where: str) -> Any:
    if expression is None:
        return None
    import jmespath
    from jmespath.exceptions import JMESPathError

    if not isinstance(expression, str) or not expression.strip():
        raise ConfigError(f"{where} must be a JMESPath expression (a text), got {expression!r}")
    try:
        return jmespath.compile(expression)
    except JMESPathError as exc:
        raise ConfigError(f"{where} is not a valid JMESPath expression: {exc}") from None


def _compile_regex(pattern: str | None, where: str) -> Any:
    if pattern is None:
        return None
    if not isinstance(pattern, str):
        raise ConfigError(f"{where} must be a regular expression (a text), got {pattern!r}")
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ConfigError(f"{where} is not a valid regular expression: {exc}") from None


def _check_template(template: Any, source: str, where: str = "request") -> None:
    """Every placeholder of ``template`` is known and well formed.

    Raises:
        ConfigError: naming the place in the template (``request.context.overrides``).
    """
    if isinstance(template, Mapping):
        for key, value in template.items():
            if not isinstance(key, str):
                raise ConfigError(f"{source}: {where}: keys are texts, got {key!r}")
            _check_template(value, source, f"{where}.{key}")
    elif isinstance(template, list):
        for i, value in enumerate(template):
            _check_template(value, source, f"{where}[{i}]")
    elif isinstance(template, str):
        t = string.Template(template)
        if not t.is_valid():
            raise ConfigError(f"{source}: {where}: {template!r} has a '$' that starts no placeholder "
                              "(write $$ for a literal $)")
        unknown = [n for n in t.get_identifiers() if n not in PLACEHOLDERS]
        if unknown:
            raise ConfigError(f"{source}: {where}: unknown placeholder ${{{unknown[0]}}}; known: "
                              f"{', '.join('${' + p + '}' for p in PLACEHOLDERS)}")
    elif not (template is None or isinstance(template, (bool, int, float))):
        raise ConfigError(f"{source}: {where}: not JSON ({type(template).__name__})")


def placeholders_of(template: Any) -> set[str]:
    """The placeholder names ``template`` uses anywhere (``{"messages", "overrides"}`` for
    the default request)."""
    if isinstance(template, Mapping):
        return set().union(*(placeholders_of(v) for v in template.values())) if template else set()
    if isinstance(template, list):
        return set().union(*(placeholders_of(v) for v in template)) if template else set()
    if isinstance(template, str):
        t = string.Template(template)
        return set(t.get_identifiers()) if t.is_valid() else set()
    return set()


def render_request(template: Any, values: Mapping[str, Any]) -> Any:
    """Fill ``template``'s placeholders with ``values`` (see the module docstring).

    Args:
        template: the JSON template (checked by :class:`AppConfig`).
        values: one value per name of :data:`PLACEHOLDERS`.

    Returns:
        A new JSON value; ``template`` is left as it was.
    """
    if isinstance(template, Mapping):
        return {k: render_request(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [render_request(v, values) for v in template]
    if isinstance(template, str):
        whole = re.fullmatch(r"\$\{(\w+)\}|\$(\w+)", template)
        if whole:
            return values[whole.group(1) or whole.group(2)]
        as_text = {k: v if isinstance(v, str) else json.dumps(v, ensure_ascii=False) for k, v in values.items()}
        return string.Template(template).substitute(as_text)
    return template


def load_app_config(path: str | Path | None = None) -> AppConfig:
    """Read a config file (YAML or JSON; see the module docstring); None gives the defaults.

    Raises:
        ConfigError: the file cannot be read, is not a mapping, has an unknown key (with the
            nearest known one), or holds a bad template, expression or pattern (each names the
            file and the key).
    """
    if path is None:
        return AppConfig()
    import difflib

    import yaml

    where = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"app config {where} cannot be read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"app config {where} is not UTF-8 text") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"app config {where} is not YAML or JSON: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(f"app config {where} must be a mapping of settings, got {type(data).__name__}")

    def unknown(keys: Any, known: set[str], prefix: str) -> None:
        for key in keys:
            if key not in known:
                near = difflib.get_close_matches(str(key), sorted(known), n=1)
                tail = f"; did you mean '{near[0]}'?" if near else f"; known: {', '.join(sorted(known))}"
                raise ConfigError(f"app config {where}: unknown key '{prefix}{key}'{tail}")

    unknown(data, _KEYS, "")
    response = data.get("response") or {}
    if not isinstance(response, dict):
        raise ConfigError(f"app config {where}: response must map answer/citations/contexts/session to JMESPath")
    unknown(response, _RESPONSE_KEYS, "response.")
    for name in ("overrides", "headers"):
        if not isinstance(data.get(name) or {}, dict):
            raise ConfigError(f"app config {where}: {name} must be a mapping")
    refusals = data.get("refusals")
    if refusals is not None and (not isinstance(refusals, list) or not all(isinstance(r, str) for r in refusals)):
        raise ConfigError(f"app config {where}: refusals must be a list of regular expressions")
    url = data.get("url")
    if url is not None and (not isinstance(url, str) or not url.lower().startswith(("http://", "https://"))):
        raise ConfigError(f"app config {where}: url must be an http:// or https:// URL, got {url!r}")
    kwargs: dict[str, Any] = {"source": where, "url": url, "overrides": dict(data.get("overrides") or {}),
                              "headers": {str(k): str(v) for k, v in (data.get("headers") or {}).items()}}
    if "request" in data:
        kwargs["request"] = data["request"]
    for name in ("answer", "citations", "contexts", "session"):
        if name in response:
            kwargs[name] = response[name]
    for name in ("citations_in_answer", "citation_pattern", "context_pattern"):
        if name in data:
            kwargs[name] = data[name]
    if refusals is not None:
        kwargs["refusals"] = tuple(refusals)
    return AppConfig(**kwargs)


# ------------------------------------------------------------------------------------ replies


@dataclass(frozen=True)
class Citation:
    """One source an answer cites.

    Attributes:
        document: the document id as the app names it.
        page: the 1-based page, or None.
        text: the citation as it came (for reports).
    """

    document: str
    page: int | None = None
    text: str = ""


@dataclass(frozen=True)
class MappedReply:
    """What the response mapping found in one reply.

    Attributes:
        answer: the answer text, or None when the mapping found none.
        citations: the cited sources, in the order cited (duplicates dropped).
        contexts: the retrieved passages, as ``core.rag.Context`` objects.
        context_pages: each passage's 1-based page, or None, aligned with ``contexts``.
        session: what ``response.session`` found (any JSON), or None.
        error: why the reply could not be read (with its first 200 characters), else None.
    """

    answer: str | None
    citations: tuple[Citation, ...] = ()
    contexts: tuple[Any, ...] = ()
    context_pages: tuple[int | None, ...] = ()
    session: Any = None
    error: str | None = None


def _excerpt(body: Any) -> str:
    text = body if isinstance(body, str) else json.dumps(body, ensure_ascii=False)
    return text[:REPLY_EXCERPT_CHARS]


def _page(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int) and value >= 1:
        return value
    if isinstance(value, str) and value.strip().isdigit() and int(value) >= 1:
        return int(value)
    return None


def _citations(config: AppConfig, found: Any, answer: str) -> list[Citation]:
    items: list[Any] = []
    if found is not None:
        items.extend(found if isinstance(found, list) else [found])
    if config.citations_in_answer:
        for match in re.finditer(config.citations_in_answer, answer):
            items.append(match.group(1) if match.groups() else match.group(0))
    pattern = re.compile(config.citation_pattern, re.IGNORECASE)
    out: list[Citation] = []
    for item in items:
        if isinstance(item, Mapping):
            doc = item.get("document")
            if isinstance(doc, str) and doc.strip():
                out.append(Citation(doc.strip(), _page(item.get("page")), json.dumps(item, ensure_ascii=False)))
        elif isinstance(item, str):
            match = pattern.match(item)
            if match and match.groupdict().get("document"):
                out.append(Citation(match.group("document").strip(), _page(match.groupdict().get("page")), item))
    seen: set[tuple[str, int | None]] = set()
    unique = []
    for c in out:
        if (c.document, c.page) not in seen:
            seen.add((c.document, c.page))
            unique.append(c)
    return unique


def _contexts(config: AppConfig, found: Any) -> list[tuple[Any, int | None]]:
    items = found if isinstance(found, list) else ([] if found is None else [found])
    pattern = re.compile(config.context_pattern, re.IGNORECASE | re.DOTALL) if config.context_pattern else None
    out = []
    for item in items:
        if isinstance(item, Mapping) and isinstance(item.get("text"), str):
            doc = item.get("document")
            out.append((Context(item["text"], doc.strip() if isinstance(doc, str) and doc.strip() else None),
                        _page(item.get("page"))))
        elif isinstance(item, str):
            match = pattern.match(item) if pattern is not None else None
            if match is not None and match.groupdict().get("text") is not None:
                groups = match.groupdict()
                out.append((Context(groups["text"], (groups.get("document") or "").strip() or None),
                            _page(groups.get("page"))))
            else:
                out.append((Context(item, None), None))
    return out


def map_reply(config: AppConfig, body: Any) -> MappedReply:
    """Read one parsed reply with ``config``'s response mapping.

    Args:
        config: the app config.
        body: the reply's JSON.

    Returns:
        A :class:`MappedReply`; ``error`` is set (with the reply's first 200 characters) when
        ``answer`` finds no text. Citations and contexts that find nothing are empty, not errors.
    """
    import jmespath

    def search(expression: str | None) -> Any:
        return None if expression is None else jmespath.search(expression, body)

    try:
        answer = search(config.answer)
    except Exception as exc:  # noqa: BLE001 - jmespath's runtime errors (a function on the wrong type)
        return MappedReply(None, error=f"response.answer {config.answer!r} failed on the reply ({exc}): "
                                       f"{_excerpt(body)!r}")
    if not isinstance(answer, str):
        what = "found nothing" if answer is None else f"found {type(answer).__name__}, not a text"
        return MappedReply(None, error=f"response.answer {config.answer!r} {what} in the reply: {_excerpt(body)!r}")
    try:
        citations = _citations(config, search(config.citations), answer)
        contexts = _contexts(config, search(config.contexts))
        session = search(config.session)
    except Exception as exc:  # noqa: BLE001 - as above
        return MappedReply(None, error=f"the response mapping failed on the reply ({exc}): {_excerpt(body)!r}")
    return MappedReply(answer, tuple(citations), tuple(c for c, _ in contexts), tuple(p for _, p in contexts), session)


def refused(answer: str | None, patterns: Sequence[str]) -> bool:
    """Whether ``answer`` declines: one of ``patterns`` (case-insensitive) is found in it."""
    if not answer:
        return False
    return any(re.search(p, answer, re.IGNORECASE) for p in patterns)
