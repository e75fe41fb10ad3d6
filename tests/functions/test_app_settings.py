"""Every setting the app reads is set by the deployment and by the local settings sample.

The names come from the source, never from a list kept here:

- ``core/**/*.py``: string literals read from a mapping or the environment
  (``env.get("NAME")``, ``env["NAME"]``, ``"NAME" in env``, ``os.environ.get``, ``os.getenv``)
  whose name starts with ``RAGTUNE_``, ``AZURE`` or ``AzureWebJobs``, plus every ``RAGTUNE_*``
  name in the table of ``core/settings.py``'s docstring;
- ``functions/*.py``: the binding settings of the triggers and bindings, ``%NAME%`` tokens and
  ``connection="NAME"`` arguments (and ``AzureWebJobsStorage``, the host's own connection).

Each must be an app setting in ``infra/main.bicep`` and a value in
``local.settings.sample.json``. A connection ``X`` is set in Bicep by ``X`` itself or by the
identity-based form the Functions host reads (``X__accountName``, ``X__serviceUri``,
``X__blobServiceUri``, ``X__queueServiceUri``, ``X__tableServiceUri``); locally by ``X``.
A name built at run time (an f-string) is not seen.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BICEP = ROOT / "infra" / "main.bicep"
LOCAL_SAMPLE = ROOT / "local.settings.sample.json"

PREFIXES = ("RAGTUNE_", "AZURE", "AzureWebJobs")
IDENTITY_SUFFIXES = ("accountName", "serviceUri", "blobServiceUri", "queueServiceUri", "tableServiceUri")

# Read by the code only as fallbacks of a RAGTUNE_ setting, for local use: the deployment sets
# the RAGTUNE_ one (RAGTUNE_EMBEDDING_API_KEY, RAGTUNE_CHAT_API_KEY, RAGTUNE_*_BASE_URL), so a
# second, lower-priority name there would only hide which value is in force.
FALLBACK_ONLY = {
    "OPENAI_API_KEY": "fallback of RAGTUNE_EMBEDDING_API_KEY / RAGTUNE_CHAT_API_KEY (provider openai)",
    "AZURE_OPENAI_API_KEY": "fallback of RAGTUNE_EMBEDDING_API_KEY / RAGTUNE_CHAT_API_KEY (provider azure)",
    "AZURE_OPENAI_ENDPOINT": "fallback of RAGTUNE_EMBEDDING_BASE_URL / RAGTUNE_CHAT_BASE_URL (provider azure)",
}

# Read for the command line only: ``ragtune evaluate-app`` (the deployed RAG app it asks) and
# ``--dry-run`` (the price table). No function of the Functions app asks a deployed app or plans
# a dry run, so the deployment sets none of them.
CLI_ONLY = {
    **{f"RAGTUNE_APP_{n}": "ragtune evaluate-app" for n in (
        "URL", "API_KEY", "KEY_HEADER", "SCOPE", "CONCURRENCY", "REQUESTS_PER_MINUTE", "TIMEOUT_S", "DEADLINE_S",
        "MAX_ATTEMPTS", "STOP_AFTER")},
    "RAGTUNE_PRICES": "--dry-run", "RAGTUNE_PRICES_FILE": "--dry-run",
    # hf: models need torch, which the Functions' requirements leave out; the branch is a CI gate's
    "RAGTUNE_ALLOW_MODEL_DOWNLOAD": "--allow-download", "RAGTUNE_BRANCH": "the CI gate (--branch)",
}

_READ_METHODS = {"get", "getenv"}
_BINDING_TOKEN = re.compile(r"%([A-Za-z][A-Za-z0-9_]*)%")
_DOC_NAME = re.compile(r"\bRAGTUNE_[A-Z0-9_]*[A-Z0-9](?:__[A-Za-z]+)?")


def _wanted(name: str) -> bool:
    return name.startswith(PREFIXES) and not name.startswith("RAGTUNE_TEST_")


def _str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def env_reads(source: str) -> set[str]:
    """Names read from a mapping or the environment in ``source`` (see the module docstring)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _READ_METHODS:
            name = _str(node.args[0]) if node.args else None
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            name = _str(node.slice)
        elif isinstance(node, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops):
            name = _str(node.left)
        else:
            continue
        if name and _wanted(name):
            names.add(name)
    return names


def documented_names(source: str) -> set[str]:
    """``RAGTUNE_*`` names in the module docstring of ``source`` (the settings table)."""
    doc = ast.get_docstring(ast.parse(source)) or ""
    return set(_DOC_NAME.findall(doc))


def binding_settings(source: str) -> tuple[set[str], set[str]]:
    """``(%NAME% tokens, connection names)`` in the keyword arguments of calls in ``source``
    (the trigger and binding decorators)."""
    tokens: set[str] = set()
    connections: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        for kw in node.keywords:
            value = _str(kw.value)
            if value is None:
                continue
            tokens.update(_BINDING_TOKEN.findall(value))
            if kw.arg == "connection":
                connections.add(value)
    return tokens, connections


def code_settings() -> tuple[set[str], set[str]]:
    """``(every setting name the code reads, the connection names among them)``."""
    names: set[str] = set()
    for path in sorted((ROOT / "core").rglob("*.py")):
        names |= env_reads(path.read_text(encoding="utf-8"))
    names |= documented_names((ROOT / "core" / "settings.py").read_text(encoding="utf-8"))
    connections = {"AzureWebJobsStorage"}
    for path in sorted((ROOT / "functions").glob("*.py")):
        tokens, conns = binding_settings(path.read_text(encoding="utf-8"))
        names |= tokens | conns
        connections |= conns
    return names - set(FALLBACK_ONLY) - set(CLI_ONLY), connections


def bicep_app_settings(text: str) -> set[str]:
    """The names in the ``appSettings: [ ... ]`` array of the Function App in ``text``."""
    start = text.index("appSettings: [")
    depth, i = 0, text.index("[", start)
    for i in range(i, len(text)):
        depth += {"[": 1, "]": -1}.get(text[i], 0)
        if depth == 0:
            break
    block = "\n".join(line.split("//", 1)[0] for line in text[start:i].splitlines())
    return set(re.findall(r"\bname:\s*'([^']+)'", block))


def local_settings() -> set[str]:
    return set(json.loads(LOCAL_SAMPLE.read_text(encoding="utf-8"))["Values"])


def test_the_scan_finds_reads_and_bindings():
    """The scanner on a hand-written module: every read form is found, writes and unrelated
    names are not."""
    source = '''
import os
def f(env):
    a = env.get("RAGTUNE_A", "x")
    b = env["RAGTUNE_B"]
    c = os.environ.get("AZURE_C")
    d = os.getenv("AzureWebJobsD")
    if "RAGTUNE_E" in env:
        pass
    os.environ["RAGTUNE_WRITTEN"] = "1"
    other = {"k": 1}.get("HOME")
    return env.get("RAGTUNE_TEST_ONLY")
'''
    assert env_reads(source) == {"RAGTUNE_A", "RAGTUNE_B", "AZURE_C", "AzureWebJobsD", "RAGTUNE_E"}
    bindings = '''
@bp.queue_trigger(arg_name="m", queue_name="%RAGTUNE_Q%-poison", connection="MY_CONN")
def g(m):
    logger.info("%d%% done %s", 1, "x")
'''
    assert binding_settings(bindings) == ({"RAGTUNE_Q"}, {"MY_CONN"})
    assert documented_names('"""| ``RAGTUNE_X`` | a | b |\n| ``RAGTUNE_C__clientId`` | `_PORT` |"""') == {
        "RAGTUNE_X", "RAGTUNE_C__clientId"}


def test_the_code_reads_settings():
    """A scan that finds nothing would pass the checks below vacuously."""
    names, connections = code_settings()
    assert {"RAGTUNE_OUT_DIR", "RAGTUNE_STORAGE_CONNECTION", "AzureWebJobsStorage"} <= names
    assert "RAGTUNE_STORAGE_CONNECTION" in connections


def test_every_setting_is_set_in_the_bicep_app_settings():
    bicep = bicep_app_settings(BICEP.read_text(encoding="utf-8"))
    names, connections = code_settings()

    def is_set(name: str) -> bool:
        return name in bicep or name in connections and any(f"{name}__{s}" in bicep for s in IDENTITY_SUFFIXES)

    missing = sorted(n for n in names if not is_set(n))
    assert not missing, f"read by the app but not set in {BICEP.relative_to(ROOT)} appSettings: {missing}"


def test_every_setting_is_in_the_local_settings_sample():
    names, _ = code_settings()
    missing = sorted(names - local_settings())
    assert not missing, f"read by the app but not in {LOCAL_SAMPLE.name} Values: {missing}"


def test_connections_are_identity_based_in_bicep():
    """No connection string (and so no account key) in the deployment: each connection is the
    identity-based form, with the managed identity's client id."""
    bicep = bicep_app_settings(BICEP.read_text(encoding="utf-8"))
    _, connections = code_settings()
    for name in sorted(connections):
        assert name not in bicep, f"{name} would be read as a connection string"
        assert f"{name}__credential" in bicep and f"{name}__clientId" in bicep, name


def test_command_line_settings_are_not_used_by_the_functions():
    for path in sorted((ROOT / "functions").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert not any(name in text for name in CLI_ONLY), path
        assert "evaluate_app" not in text and "dry_run" not in text, path


def test_fallback_only_names_are_not_deployed():
    bicep = bicep_app_settings(BICEP.read_text(encoding="utf-8"))
    assert not set(FALLBACK_ONLY) & bicep


@pytest.fixture(scope="module")
def bicep_text() -> str:
    return BICEP.read_text(encoding="utf-8")


def test_event_grid_webhook_names_the_golden_blob_trigger(app_functions, bicep_text):
    """The Event Grid subscription delivers to ``Host.Functions.<name>``: that function must be
    a blob trigger with the Event Grid source on the container the subscription filters."""
    function_name = re.search(r"var goldenFunctionName = '([^']+)'", bicep_text).group(1)
    container = re.search(r"var goldenContainerName = '([^']+)'", bicep_text).group(1)
    assert "functionName=Host.Functions.${goldenFunctionName}" in bicep_text
    assert "subjectBeginsWith: '/blobServices/default/containers/${goldenContainerName}/'" in bicep_text
    assert "{ name: 'RAGTUNE_GOLDEN_CONTAINER', value: goldenContainerName }" in bicep_text
    assert "{ name: 'RAGTUNE_GOLDEN_TRIGGER_SOURCE', value: 'EventGrid' }" in bicep_text
    assert function_name in app_functions
    triggers = [b.get_dict_repr() for b in app_functions[function_name].get_bindings()
                if b.get_dict_repr()["type"] == "blobTrigger"]
    assert len(triggers) == 1
    assert triggers[0]["source"] == "EventGrid"
    assert triggers[0]["path"].startswith("%RAGTUNE_GOLDEN_CONTAINER%/")
    assert container == "golden"
