"""The Functions app: indexes cleanly, stays light at import, and its functions call core."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import azure.functions as func

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sentence_transformers", "pymilvus", "milvus_lite", "docling", "unitxt", "pygam", "transformers")


def test_app_imports_without_heavy_modules():
    code = (
        "import sys, json; sys.path.insert(0, %r); import function_app; "
        "print(json.dumps(sorted(m for m in sys.modules)))" % str(ROOT)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded = json.loads(out.stdout)
    assert [m for m in loaded if m.split(".")[0] in HEAVY] == []


_FUNCTIONS: dict = {}


def _functions() -> dict:
    """The app's functions by name, as the host indexes them (get_functions() builds once)."""
    if not _FUNCTIONS:
        import function_app

        _FUNCTIONS.update({f.get_function_name(): f for f in function_app.app.get_functions()})
    return _FUNCTIONS


def test_app_registers_the_blueprint_functions():
    functions = _functions()
    assert {"health", "check_golden_http"} <= set(functions)
    triggers = [b for b in functions["check_golden_http"].get_bindings() if b.type == "httpTrigger"]
    assert len(triggers) == 1 and triggers[0].route == "golden/check"


def _function(name: str):
    return _functions()[name].get_user_function()


def test_health():
    resp = _function("health")(func.HttpRequest("GET", "/api/health", body=b""))
    assert resp.status_code == 200
    assert json.loads(resp.get_body())["status"] == "ok"


def test_golden_check_over_http(northwind_dir):
    ok = _function("check_golden_http")(
        func.HttpRequest("POST", "/api/golden/check", body=(northwind_dir / "golden.jsonl").read_bytes(),
                         params={"name": "golden.jsonl"})
    )
    assert ok.status_code == 200
    assert json.loads(ok.get_body())["n_ready"] == 49

    bad = _function("check_golden_http")(
        func.HttpRequest("POST", "/api/golden/check", body=b'{"question": "q", "expeted": ["a.pdf"]}\n')
    )
    body = json.loads(bad.get_body())
    assert bad.status_code == 422
    assert any(e["line"] == 1 and "expeted" in e["message"] for e in body["errors"])


def test_core_never_imports_functions_or_azure_functions():
    offenders = []
    for path in (ROOT / "core").rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                if name.split(".")[0] == "functions" or name.startswith("azure.functions") or name.startswith("azure.durable"):
                    offenders.append(f"{path.relative_to(ROOT)}: {name}")
    assert offenders == []
