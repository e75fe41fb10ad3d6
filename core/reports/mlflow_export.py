"""Logging stored reports to MLflow: one parent run per report (the report as its artifact)
and one nested run per evaluated configuration, with its parameters and metrics.

The default store is local: an SQLite database and the artifacts in ``./mlruns/``
(MLflow's own file store is in maintenance mode and refuses new use unless told
otherwise; any tracking URI MLflow accepts may be given instead). mlflow (the
``mlflow-skinny`` package is enough) is imported when a report is logged.

References:
    MLflow Tracking, https://mlflow.org/docs/latest/tracking.html (``MlflowClient``,
    nested runs through the ``mlflow.parentRunId`` tag; metric names allow letters,
    digits, ``_ - . / `` and spaces, so ``found@5`` is logged as ``found_at_5``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from core.errors import ConfigError, StoreError
from core.reports.tables import metric_label, report_kind

#: Where reports are logged unless a tracking URI is given: ``./mlruns/mlflow.db``.
DEFAULT_TRACKING_URI = "sqlite:///mlruns/mlflow.db"
#: The tag that names the report a parent run holds, so a report is logged once.
REPORT_TAG = "ragtune.report_id"
_BAD = re.compile(r"[^A-Za-z0-9_\-. /]")


def metric_name(name: str) -> str:
    """A report metric as an MLflow metric name: ``found@5`` -> ``found_at_5``."""
    return _BAD.sub("_", metric_label(name).replace("@", "_at_"))


def _param(value: Any) -> str:
    return "" if value is None else str(value)[:500]


def _client(tracking_uri: str) -> Any:
    try:
        from mlflow.tracking import MlflowClient
    except ImportError as exc:
        raise ConfigError("--mlflow needs MLflow: pip install mlflow-skinny") from exc
    if tracking_uri == DEFAULT_TRACKING_URI:
        Path("mlruns").mkdir(exist_ok=True)
    return MlflowClient(tracking_uri=tracking_uri)


def _configurations(report: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """``(report id, [{name, params, metrics}])`` for a retrieval or experiment report."""
    kind = report_kind(report)
    if kind == "experiment":
        out = []
        for row in report.get("leaderboard") or []:
            metrics = {}
            for key, name in (("score", metric_name(str(report.get("objective") or "score"))),
                              ("ci_low", "ci_low"), ("ci_high", "ci_high"), ("duration_s", "duration_s")):
                if isinstance(row.get(key), (int, float)):
                    metrics[name] = float(row[key])
            params = {k: _param(v) for k, v in (row.get("parameters") or {}).items()}
            params["status"] = _param(row.get("status"))
            if row.get("n_questions") is not None:  # the questions the score is over (rungs: maybe a subset)
                params["n_questions"] = _param(row.get("n_questions"))
                params["fully_evaluated"] = _param(row.get("fully_evaluated"))
            out.append({"name": f"trial {row.get('trial')}", "params": params, "metrics": metrics,
                        "tags": {"ragtune.key": _param(row.get("key"))}})
        return f"experiment/{report.get('experiment_id')}", out
    if kind != "retrieval":
        raise ConfigError("MLflow logging covers evaluate runs and experiments")
    ix = report.get("indexing") or {}
    chunking = ix.get("chunking") if isinstance(ix.get("chunking"), dict) else {}
    base = {"chunking_method": chunking.get("method"), "chunk_size": chunking.get("chunk_size"),
            "chunk_overlap": chunking.get("chunk_overlap"), "embedding_model": ix.get("embedding_model"),
            "vector_store": ix.get("vector_store")}
    out = []
    for s in report.get("setups") or []:
        metrics = {}
        for grain, block in (s.get("metrics") or {}).items():
            for name, value in ((block or {}).get("means") or {}).items():
                if isinstance(value, (int, float)):
                    metrics[f"{grain}.{metric_name(name)}"] = float(value)
        for key, value in (s.get("timings_ms") or {}).items():
            if key in ("median", "p95") and isinstance(value, (int, float)):
                metrics[f"search_{key}_ms"] = float(value)
        params = {k: _param(v) for k, v in {**base, **(s.get("setup") or {})}.items()}
        params["setup"] = _param(s.get("name"))
        out.append({"name": str(s.get("name")), "params": params, "metrics": metrics, "tags": {}})
    return f"retrieval/{report.get('run_id')}", out


def log_report(report: dict[str, Any], *, tracking_uri: str = DEFAULT_TRACKING_URI,
               experiment_name: str | None = None) -> list[str]:
    """Log ``report`` to MLflow; a report already logged there is not logged again.

    Args:
        report: a stored retrieval or experiment report.
        tracking_uri: where to log (default :data:`DEFAULT_TRACKING_URI`).
        experiment_name: the MLflow experiment (default ``ragtune <golden file path>``).

    Returns:
        The MLflow run ids: the parent first, then one per configuration (in the order logged).

    Raises:
        ConfigError: MLflow is not installed, or the report is of another kind.
        StoreError: the tracking store refused the runs (the message is MLflow's).
    """
    report_id, configurations = _configurations(report)
    client = _client(tracking_uri)
    name = experiment_name or f"ragtune {(report.get('golden') or {}).get('path') or 'reports'}"
    try:
        from mlflow.exceptions import MlflowException
    except ImportError as exc:  # pragma: no cover - _client raised already
        raise ConfigError("--mlflow needs MLflow: pip install mlflow-skinny") from exc
    try:
        found = client.get_experiment_by_name(name)
        if found is not None:
            experiment_id = found.experiment_id
        else:
            location = (Path("mlruns") / "artifacts").resolve().as_uri() if tracking_uri == DEFAULT_TRACKING_URI else None
            experiment_id = client.create_experiment(name, artifact_location=location)
        done = client.search_runs([experiment_id], filter_string=f"tags.`{REPORT_TAG}` = '{report_id}'")
        if done:
            parent = done[0].info.run_id
            children = client.search_runs([experiment_id], filter_string=f"tags.`mlflow.parentRunId` = '{parent}'",
                                          order_by=["attributes.start_time ASC"])
            return [parent] + [c.info.run_id for c in children]
        parent = client.create_run(experiment_id, run_name=report_id, tags={REPORT_TAG: report_id})
        ids = [parent.info.run_id]
        client.log_dict(parent.info.run_id, report, "report.json")
        for cfg in configurations:
            run = client.create_run(experiment_id, run_name=cfg["name"],
                                    tags={"mlflow.parentRunId": parent.info.run_id, **cfg["tags"]})
            for key, value in cfg["params"].items():
                client.log_param(run.info.run_id, key, value)
            for key, value in cfg["metrics"].items():
                client.log_metric(run.info.run_id, key, value)
            client.set_terminated(run.info.run_id)
            ids.append(run.info.run_id)
        client.set_terminated(parent.info.run_id)
        return ids
    except MlflowException as exc:
        raise StoreError(f"MLflow at {tracking_uri} refused the runs: {exc.message}") from exc
