"""Which targets to search: ``--target KIND:WHERE#INDEX`` options and the targets file.

A targets file is YAML or JSON: a list of targets, or ``{"targets": [...]}``. Each target::

    - name: prod                       # its name in reports (letters, digits, - _ . :)
      kind: azure-search               # azure-search | pgvector | qdrant | milvus
      endpoint: https://my-search.search.windows.net   # azure-search (else RAGTUNE_SEARCH_ENDPOINT)
      index: docs-prod                 # azure-search index; pgvector table; qdrant / milvus collection
      auth: entra                      # azure-search: entra (default) or key (RAGTUNE_SEARCH_API_KEY)
      fields: {text: content, document: sourcefile, page: page, vector: contentVector}
    - name: candidate
      kind: pgvector
      dsn: postgresql://reader@db.internal:5432/rag   # else RAGTUNE_PG_*; a password is never shown
      table: public.chunks
    - {name: local, kind: qdrant, path: ./qdrant-data, collection: docs}
    - {name: team, kind: milvus, uri: http://milvus:19530, collection: docs}

On the command line, ``azure-search:INDEX`` (the endpoint from ``RAGTUNE_SEARCH_ENDPOINT``),
``azure-search:ENDPOINT#INDEX``, ``pgvector:DSN#TABLE`` (``pgvector:#TABLE`` takes the
database from ``RAGTUNE_PG_*``), ``qdrant:PATH_OR_URL#COLLECTION`` and
``milvus:URI_OR_DB_PATH#COLLECTION``; their fields are inferred.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from core.errors import ConfigError
from core.redaction import shown_url
from core.targets.mapping import FieldMapping
from core.vectorstores.pgvector import PGVectorConfig

#: Kinds of targets searched in place.
TARGET_KINDS: tuple[str, ...] = ("azure-search", "pgvector", "qdrant", "milvus")
#: The name of the collection ragtune builds from ``--docs`` when other targets are searched too.
BUILT_TARGET = "ragtune"
#: Keys that give a target's location, by kind (the first present wins).
_LOCATION_KEYS = {"azure-search": ("endpoint",), "pgvector": ("dsn",), "qdrant": ("path", "url"),
                  "milvus": ("uri", "path")}
#: Keys that give a target's index, by kind.
_INDEX_KEYS = {"azure-search": ("index",), "pgvector": ("table",), "qdrant": ("collection",),
               "milvus": ("collection",)}
_ALLOWED = {"name", "kind", "fields", "auth", "endpoint", "dsn", "path", "url", "uri", "index", "table",
            "collection"}
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,79}$")
#: Most targets one run searches.
MAX_TARGETS = 32


@dataclass(frozen=True)
class TargetSpec:
    """One target to open: its kind, where it is, its index and its field mapping.

    Attributes:
        name: the target's name in reports.
        kind: one of :data:`TARGET_KINDS`.
        location: endpoint, DSN, folder or URI; ``""`` takes it from the settings. May hold a
            credential (a DSN's password): never shown; :meth:`shown_location` is.
        index: the index, table or collection.
        fields: the field mapping named (roles left out are inferred).
        auth: Azure AI Search: ``entra`` (``DefaultAzureCredential``) or ``key``
            (``RAGTUNE_SEARCH_API_KEY``); ``default`` is ``key`` when a key is configured, else
            ``entra``.
        source: where it was given, for messages (``targets.yaml:12``, ``--target``).
    """

    name: str
    kind: str
    location: str
    index: str
    fields: FieldMapping = field(default_factory=FieldMapping)
    auth: str = "default"
    source: str = ""

    def __repr__(self) -> str:
        return (f"TargetSpec(name={self.name!r}, kind={self.kind!r}, location={self.shown_location()!r}, "
                f"index={self.index!r}, source={self.source!r})")

    def shown_location(self) -> str:
        """The location without credentials: a DSN as ``host:port/db as user``, a URL without
        its user, password and query string."""
        if not self.location:
            return "(from the settings)"
        if self.kind == "pgvector":
            return PGVectorConfig(dsn=self.location).describe()
        return shown_url(self.location)


def _check_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{where}: target name {name!r} is invalid: 1 to 80 letters, digits, '-', '_', '.' or ':', "
                          "starting with a letter or digit")
    if name == BUILT_TARGET:
        raise ConfigError(f"{where}: the target name {BUILT_TARGET!r} is kept for the collection built from --docs")
    return name


def parse_target_option(text: str) -> TargetSpec:
    """Parse one ``--target KIND:WHERE#INDEX`` (see the module docstring).

    The target's name is ``KIND:INDEX``: never the location, which may hold a password.

    Raises:
        ConfigError: an unknown kind, or no index.
    """
    kind, sep, rest = text.partition(":")
    kind = kind.strip().lower()
    if not sep or kind not in TARGET_KINDS:
        raise ConfigError(f"--target {text.split(':', 1)[0]!r}...: use KIND:WHERE#INDEX with KIND one of "
                          f"{', '.join(TARGET_KINDS)} (for example azure-search:INDEX or pgvector:DSN#TABLE)")
    if "#" in rest:
        location, index = rest.rsplit("#", 1)
    elif kind == "azure-search":
        location, index = "", rest
    else:
        raise ConfigError(f"--target {kind}:...: give the {_INDEX_KEYS[kind][0]} after '#' ({kind}:WHERE#"
                          f"{_INDEX_KEYS[kind][0].upper()})")
    index = index.strip()
    if not index:
        raise ConfigError(f"--target {kind}:...: the {_INDEX_KEYS[kind][0]} is empty")
    name = f"{kind}:{index}"
    if not _NAME.match(name):
        raise ConfigError(f"--target {kind}:...#{index}: the {_INDEX_KEYS[kind][0]} name has characters a target "
                          "name cannot hold; use a targets file to give it a name")
    return TargetSpec(name=name, kind=kind, location=location.strip(), index=index, source="--target")


def _one(entry: Mapping[str, Any], keys: Sequence[str], where: str, what: str, required: bool) -> str:
    present = [k for k in keys if entry.get(k) not in (None, "")]
    if len(present) > 1:
        raise ConfigError(f"{where}: give one of {', '.join(keys)}, not several")
    if not present:
        if required:
            raise ConfigError(f"{where}: {what} is missing (give {' or '.join(keys)})")
        return ""
    value = entry[present[0]]
    if not isinstance(value, (str, int)) or isinstance(value, bool):
        raise ConfigError(f"{where}: {present[0]} must be text, got {value!r}")
    return str(value).strip()


def spec_from_entry(entry: Any, where: str) -> TargetSpec:
    """One target of a targets file.

    Raises:
        ConfigError: not a mapping, an unknown key or kind, a bad name, no index, or a bad
            ``fields`` block (``where`` names the file and line).
    """
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where}: a target is a mapping of name, kind, index, ...; got {type(entry).__name__}")
    unknown = sorted(set(map(str, entry)) - _ALLOWED)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {', '.join(unknown)}; a target has {', '.join(sorted(_ALLOWED))}")
    kind = str(entry.get("kind") or "").strip().lower()
    if kind not in TARGET_KINDS:
        raise ConfigError(f"{where}: kind must be one of {', '.join(TARGET_KINDS)}, got {entry.get('kind')!r}")
    name = _check_name(entry.get("name"), where)
    where = f"{where} (target {name})"
    every_location = {k for keys in _LOCATION_KEYS.values() for k in keys}
    every_index = {k for keys in _INDEX_KEYS.values() for k in keys}
    for other in sorted((every_location - set(_LOCATION_KEYS[kind])) | (every_index - set(_INDEX_KEYS[kind]))):
        if entry.get(other) not in (None, ""):
            wanted = " or ".join(_LOCATION_KEYS[kind] + _INDEX_KEYS[kind])
            raise ConfigError(f"{where}: a {kind} target takes {wanted}, not {other}")
    location = _one(entry, _LOCATION_KEYS[kind], where, "the location", required=kind in ("qdrant", "milvus"))
    index = _one(entry, _INDEX_KEYS[kind], where, f"the {_INDEX_KEYS[kind][0]}", required=True)
    auth = str(entry.get("auth") or "default").strip().lower()
    if auth not in ("default", "entra", "key"):
        raise ConfigError(f"{where}: auth must be entra or key, got {entry.get('auth')!r}")
    if auth != "default" and kind != "azure-search":
        raise ConfigError(f"{where}: auth applies to azure-search targets only")
    return TargetSpec(name=name, kind=kind, location=location, index=index,
                      fields=FieldMapping.from_dict(entry.get("fields"), where), auth=auth, source=where)


def _entry_lines(text: str) -> list[int]:
    """The 1-based line where each target of a YAML or JSON targets file starts."""
    import yaml

    root = yaml.compose(text)
    if isinstance(root, yaml.MappingNode):
        root = next((v for k, v in root.value if getattr(k, "value", None) == "targets"), None)
    if not isinstance(root, yaml.SequenceNode):
        return []
    return [item.start_mark.line + 1 for item in root.value]


def parse_targets_text(text: str, source: str) -> list[TargetSpec]:
    """The targets of a targets file's text (YAML or JSON).

    Args:
        text: the file's text.
        source: the file's name, for messages.

    Raises:
        ConfigError: the text is not YAML or JSON, holds no list of targets, more than
            :data:`MAX_TARGETS`, two targets of one name, or a bad target (with its line).
    """
    import yaml

    try:
        data = yaml.safe_load(text)
        lines = _entry_lines(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f":{mark.line + 1}" if mark is not None else ""
        raise ConfigError(f"{source}{at}: not valid YAML or JSON ({getattr(exc, 'problem', None) or exc})") from None
    entries = data.get("targets") if isinstance(data, Mapping) else data
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"{source}: a targets file holds a list of targets (or 'targets:' with one)")
    if len(entries) > MAX_TARGETS:
        raise ConfigError(f"{source}: {len(entries)} targets; at most {MAX_TARGETS} are searched in one run")
    out: list[TargetSpec] = []
    for i, entry in enumerate(entries):
        where = f"{source}:{lines[i]}" if i < len(lines) else f"{source} (target {i + 1})"
        out.append(spec_from_entry(entry, where))
    check_unique(out)
    return out


def read_targets_file(path: str | Path) -> list[TargetSpec]:
    """The targets of a targets file (see :func:`parse_targets_text`).

    Raises:
        ConfigError: the file cannot be read, or as :func:`parse_targets_text`.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--targets {path}: cannot be read ({getattr(exc, 'strerror', None) or exc})") from None
    return parse_targets_text(text, str(path))


def check_unique(specs: Sequence[TargetSpec]) -> None:
    """Raise ConfigError when two targets share a name (naming both sources)."""
    seen: dict[str, TargetSpec] = {}
    for spec in specs:
        if spec.name in seen:
            raise ConfigError(f"two targets are named {spec.name!r} ({seen[spec.name].source} and {spec.source}): "
                              "give each its own name")
        seen[spec.name] = spec


__all__ = ["BUILT_TARGET", "MAX_TARGETS", "TARGET_KINDS", "TargetSpec", "check_unique", "configured_targets", "parse_target_option",
           "parse_targets_text", "read_targets_file", "shown_url", "spec_from_entry"]


def configured_targets(targets_config: str | None) -> dict[str, "TargetSpec"]:
    """The targets ``RAGTUNE_TARGETS`` configures (``Settings.targets_config``), by name; empty
    when it is unset. A value that names an existing file is read as a targets file, any other
    as the file's text.

    Raises:
        ConfigError: the file or text is not a valid targets file (says where).
    """
    if not targets_config:
        return {}
    text = targets_config
    if "\n" not in text and not text.lstrip().startswith(("[", "{", "-")) and Path(text).is_file():
        specs = read_targets_file(text)
    else:
        specs = parse_targets_text(text, "RAGTUNE_TARGETS")
    return {s.name: s for s in specs}
