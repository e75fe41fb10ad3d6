"""The models a command runs with: the settings (``--allow-download``) and the embedding models
``--embedding-model`` names."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, Sequence

from core.cli.common import _csv
from core.errors import ConfigError

if TYPE_CHECKING:
    from core.settings import Settings


def _settings(args: argparse.Namespace) -> Any:
    """``Settings.from_env()``, with downloads of ``hf:`` models allowed when the command
    line says ``--allow-download`` (as ``RAGTUNE_ALLOW_MODEL_DOWNLOAD=1`` does)."""
    from dataclasses import replace

    from core.settings import Settings

    settings = Settings.from_env()
    return replace(settings, allow_model_download=True) if getattr(args, "allow_download", False) else settings


def evaluation_models(settings: Settings, names: Sequence[str] | None) -> list[Any]:
    """The embedding models ``--embedding-model`` names (each a comma-separated list of ids
    of ``Settings.embedding_models``, or of ``hf:ORG/NAME[@REVISION]`` and ``onnx:PATH``
    names), or the configured one.

    Raises:
        ConfigError: a name that is not configured (the message lists the ones that are and
            the forms a name may take), or an ``hf:`` or ``onnx:`` model that cannot be built
            or whose files are not found (the message starts with ``--embedding-model:``).
    """
    if not names:
        return [settings.embedding_model()]
    from core.models.local import name_form

    available = settings.embedding_models()
    out = []
    for name in (n for arg in names for n in _csv(arg, "--embedding-model")):  # '' is an error, not the default
        match = available.get(name) or available.get(f"local:{name}")
        if match is None:
            try:
                named = name_form(name) != "local"  # hf: and onnx: names need no configuring
            except ConfigError as exc:
                raise ConfigError(f"--embedding-model {name!r} is not configured (configured: "
                                  f"{', '.join(available)}); {exc}") from None
            if not named:
                raise ConfigError(f"--embedding-model {name!r} is not configured; configured: {', '.join(available)}")
            try:
                match = available[name] = settings.embedding_model_named(name)
                if name_form(name) == "hf":
                    match.verify()  # found in the Hugging Face cache now, before any work
            except ConfigError as exc:
                raise ConfigError(f"--embedding-model: {exc}") from None
        if match not in out:
            out.append(match)
    return out

