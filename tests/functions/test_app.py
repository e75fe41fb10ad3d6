"""The Functions app: indexes cleanly, stays light at import, and its functions call core."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import azure.functions as func
import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = ("torch", "sentence_transformers", "pymilvus", "milvus_lite", "docling", "unitxt", "pygam", "transformers",
         "jinja2", "plotly", "pandas", "starlette", "uvicorn", "mlflow")
#: The packages of the workflows, which take seconds to import.
WORKFLOWS = ("core.evaluation", "core.experiment", "core.golden", "core.metrics", "core.models", "core.vectorstores")


def test_app_imports_without_heavy_modules():
    code = (
        "import sys, json; sys.path.insert(0, %r); import function_app; "
        "print(json.dumps(sorted(m for m in sys.modules)))" % str(ROOT)
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    loaded = json.loads(out.stdout)
    assert [m for m in loaded if m.split(".")[0] in HEAVY] == []
    # nor the workflows (numpy, jsonschema and most of core): each function imports them when it runs
    assert [m for m in loaded if m.startswith(WORKFLOWS)] == []


#: Every function the host indexes: name -> (trigger type, route or path, auth level).
EXPECTED_INDEX = {
    "health": ("httpTrigger", "health", "anonymous"),
    "check_golden_http": ("httpTrigger", "golden/check", "function"),
    "golden_template_http": ("httpTrigger", "golden/template", "function"),
    "golden_suggest_http": ("httpTrigger", "golden/suggest", "function"),
    "check_golden_blob": ("blobTrigger", "%RAGTUNE_GOLDEN_CONTAINER%/{name}", None),
    "list_runs": ("httpTrigger", "runs", "function"),
    "latest_run": ("httpTrigger", "runs/latest", "function"),
    "get_run": ("httpTrigger", "runs/{run_id}", "function"),
    "get_run_golden": ("httpTrigger", "runs/{run_id}/golden", "function"),
    "get_golden_check": ("httpTrigger", "golden-checks/{*name}", "function"),
    "start_experiment": ("httpTrigger", "experiments", "function"),
    "experiment_orchestrator": ("orchestrationTrigger", None, None),
    "prepare_experiment": ("activityTrigger", None, None),
    "ask_configurations": ("activityTrigger", None, None),
    "enqueue_evaluations": ("activityTrigger", None, None),
    "tell_results": ("activityTrigger", None, None),
    "write_experiment_report": ("activityTrigger", None, None),
    "evaluate_from_queue": ("queueTrigger", "%RAGTUNE_EVALUATIONS_QUEUE%", None),
    "evaluation_poisoned": ("queueTrigger", "%RAGTUNE_EVALUATIONS_QUEUE%-poison", None),
    "get_experiment": ("httpTrigger", "experiments/{experiment_id}", "function"),
    "get_experiment_status": ("httpTrigger", "experiments/{experiment_id}/status", "function"),
    "resume_experiment": ("httpTrigger", "experiments/{experiment_id}/resume", "function"),
    "run_page": ("httpTrigger", "runs/{run_id}/page", "function"),
    "experiment_page": ("httpTrigger", "experiments/{experiment_id}/page", "function"),
    "history_page": ("httpTrigger", "history/page", "function"),
    "page_asset": ("httpTrigger", "assets/{name}", "anonymous"),
    "start_target_evaluation": ("httpTrigger", "evaluations", "function"),
    "target_evaluation_orchestrator": ("orchestrationTrigger", None, None),
    "evaluate_target_request": ("activityTrigger", None, None),
    "get_target_evaluation_status": ("httpTrigger", "evaluations/{run_id}/status", "function"),
}


def _trigger(function) -> tuple:
    triggers = [b for b in function.get_bindings() if b.type.endswith("Trigger")]
    assert len(triggers) == 1, function.get_function_name()
    t = triggers[0]
    auth = getattr(t, "auth_level", None)
    where = getattr(t, "route", None) or getattr(t, "path", None) or getattr(t, "queue_name", None)
    return t.type, where, getattr(auth, "value", auth)


def test_app_registers_the_blueprint_functions(app_functions):
    index = {name: _trigger(f) for name, f in app_functions.items()}
    assert index == EXPECTED_INDEX


def test_experiment_starter_has_a_durable_client(app_functions):
    types = sorted(b.type for b in app_functions["start_experiment"].get_bindings())
    assert types == ["durableClient", "http", "httpTrigger"]


@pytest.mark.parametrize("name", ["check_golden_blob", "evaluate_from_queue", "evaluation_poisoned",
                                  "get_experiment_status", "resume_experiment",
                                  "start_target_evaluation", "get_target_evaluation_status"])
def test_functions_that_start_or_signal_orchestrations_have_a_durable_client(app_functions, name):
    assert "durableClient" in [b.type for b in app_functions[name].get_bindings()]


@pytest.mark.parametrize("name", ["evaluate_from_queue", "evaluation_poisoned"])
def test_queue_triggers_use_the_storage_connection(app_functions, name):
    (binding,) = [b for b in app_functions[name].get_bindings() if b.type == "queueTrigger"]
    assert binding.get_dict_repr()["connection"] == "RAGTUNE_STORAGE_CONNECTION"


def test_host_json_poison_settings():
    """After maxDequeueCount failed deliveries the host moves a message to <queue>-poison,
    which evaluation_poisoned watches; messages are Base64 as the queue client writes them."""
    queues = json.loads((ROOT / "host.json").read_text())["extensions"]["queues"]
    assert queues["maxDequeueCount"] >= 1 and queues["messageEncoding"] == "base64"


def test_golden_blob_trigger_binding(app_functions):
    (binding,) = [b for b in app_functions["check_golden_blob"].get_bindings() if b.type == "blobTrigger"]
    data = binding.get_dict_repr()
    assert data["connection"] == "RAGTUNE_STORAGE_CONNECTION"
    assert data["source"] == "EventGrid"


@pytest.fixture
def _function(app_functions):
    return lambda name: app_functions[name].get_user_function()


def test_health(_function):
    resp = _function("health")(func.HttpRequest("GET", "/api/health", body=b""))
    assert resp.status_code == 200
    assert json.loads(resp.get_body())["status"] == "ok"


def test_golden_check_over_http(northwind_dir, _function):
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


def test_golden_check_over_http_is_bounded(_function, clean_env):
    # 30,000 lines, each without "expected": 30,001 errors (with "nothing ready"), 100 listed.
    body = b"".join(b'{"question": "Question %d?"}\n' % i for i in range(30000))
    resp = _function("check_golden_http")(func.HttpRequest("POST", "/api/golden/check", body=body))
    answer = json.loads(resp.get_body())
    assert resp.status_code == 422 and len(resp.get_body()) < 1_000_000
    assert answer["n_errors"] == 30001 and len(answer["errors"]) == 101
    assert answer["omitted"] == [{"severity": "error", "count": 29900, "lines": "101-30000",
                                  "example": "field 'expected': missing: give at least one document "
                                             "id, or one page as 'name.pdf#page=N'"}]
    clean_env.setenv("RAGTUNE_GOLDEN_MAX_BYTES", "1000")
    resp = _function("check_golden_http")(func.HttpRequest("POST", "/api/golden/check", body=body))
    assert resp.status_code == 413 and "RAGTUNE_GOLDEN_MAX_BYTES" in json.loads(resp.get_body())["error"]


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


def test_host_json_queue_and_durable_settings():
    host = json.loads((ROOT / "host.json").read_text())
    assert host["extensions"]["queues"]["visibilityTimeout"] == "00:01:00"
    assert host["extensions"]["durableTask"]["hubName"] == "ragtune"
    # start_new refuses an instance id whose orchestration is pending or running (the default,
    # AnyState, would replace it): a duplicate golden event or resume cannot restart a run
    assert host["extensions"]["durableTask"]["overridableExistingInstanceStates"] == "NonRunningStates"


@pytest.mark.parametrize("value, expected", [("", "EventGrid"), ("LogsAndContainerScan", "LogsAndContainerScan")])
def test_golden_trigger_source_from_the_settings(value, expected):
    """Flex Consumption needs the Event Grid source; local runs with Azurite may poll."""
    code = (
        "import sys, json; sys.path.insert(0, %r); import function_app; "
        "f = {x.get_function_name(): x for x in function_app.app.get_functions()}['check_golden_blob']; "
        "print(json.dumps([b.get_dict_repr() for b in f.get_bindings() if b.type == 'blobTrigger'][0]['source']))"
        % str(ROOT)
    )
    import os

    env = {**os.environ, "RAGTUNE_GOLDEN_TRIGGER_SOURCE": value}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    assert json.loads(out.stdout) == expected


def test_a_bad_golden_trigger_source_names_the_setting():
    import os

    env = {**os.environ, "RAGTUNE_GOLDEN_TRIGGER_SOURCE": "Polling"}
    out = subprocess.run([sys.executable, "-c", "import function_app"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode != 0 and "RAGTUNE_GOLDEN_TRIGGER_SOURCE must be EventGrid or LogsAndContainerScan" in out.stderr


def test_the_deployment_installs_every_runtime_dependency():
    """requirements.txt (what the Functions deployment installs) names every dependency of the
    package (pyproject's [project] dependencies; the `local` extra stays out)."""
    import re
    import tomllib

    def names(lines):
        return {re.split(r"[<>=!~\[ ;]", line.strip(), maxsplit=1)[0].lower().replace("_", "-") for line in lines
                if line.strip() and not line.lstrip().startswith("#")}

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    deployed = names((ROOT / "requirements.txt").read_text().splitlines())
    assert sorted(names(project["dependencies"]) - deployed) == []
    assert "milvus-lite" in deployed  # pymilvus 3 no longer pulls it in, and Milvus Lite is the default store
    assert not {"torch", "sentence-transformers"} & deployed


def test_the_function_modules_import_only_the_shared_one():
    """No import circle between the function modules: each may import ``functions.shared``,
    none another function module (read from the source, at any depth)."""
    import ast
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "functions"
    for path in sorted(folder.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        names |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        others = {m for m in names if m.startswith("functions") and m != "functions.shared"}
        assert not others, f"{path.name} imports {sorted(others)}"
