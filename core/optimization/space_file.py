"""Reading a search space file (JSON or YAML): a mapping of parameter names to values."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from core.errors import ConfigError
from core.optimization.parameters import check_name


def read_space_file(path: Path) -> dict[str, Any]:
    """Return the mapping a space file holds (empty for an empty file).

    ``.json`` is read as JSON, ``.yaml`` / ``.yml`` as YAML (pyyaml), any other suffix as
    JSON, then YAML.

    Raises:
        ConfigError: the file cannot be read or parsed, is not a mapping, or names an unknown
            parameter; messages start with the path.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the search space file ({exc})") from None
    suffix = path.suffix.lower()

    def as_yaml() -> Any:
        try:
            import yaml
        except ImportError:
            raise ConfigError(f"{path}: reading YAML needs pyyaml (pip install pyyaml), or write the file as JSON") from None
        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"{path}: not valid YAML ({exc})") from None

    def as_json() -> Any:
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None

    if suffix == ".json":
        data = as_json()
    elif suffix in (".yaml", ".yml"):
        data = as_yaml()
    else:
        try:
            data = as_json()
        except ConfigError:
            data = as_yaml()
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{path}: a search space file must hold a mapping of parameter names to values, "
                          f"got {type(data).__name__}")
    for name in data:
        check_name(name, str(path))
    return dict(data)



__all__ = ["read_space_file"]
