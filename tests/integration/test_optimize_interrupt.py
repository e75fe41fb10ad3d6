"""``ragtune optimize`` as a real process stopped by Ctrl-C: SIGINT to its whole process group, as
a terminal sends it (the Milvus Lite server, a child in the same group, stops with it). The
process ends within seconds with exit code 130 and the resume hint, stores no failed result
for the evaluation it cut short, and ``--resume`` then completes the experiment; a second
Ctrl-C while the running evaluation ends quits at once, with 130 as well."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from tests.support.corpora import first_questions

pytestmark = [pytest.mark.integration, pytest.mark.slow]

#: Seconds allowed from the SIGINT to the process's end (generous: a loaded machine; before the
#: running evaluation was stopped at its next step, it took as long as that evaluation's rest).
STOP_BOUND_S = 15.0
#: Seconds allowed to a whole run (start-up, model load, evaluations).
RUN_BOUND_S = 300.0


class _Optimize:
    """``python -m core.cli -v optimize --json ...`` in its own process group, its stderr read
    line by line in a thread."""

    def __init__(self, *args: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "HF_HUB_OFFLINE": "1",
               "TOKENIZERS_PARALLELISM": "false"}
        self.lines: list[str] = []
        self.proc = subprocess.Popen([sys.executable, "-m", "core.cli", "-v", "optimize", "--json", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                                     start_new_session=True)  # its own group, as a terminal's job
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stderr:
            self.lines.append(line.rstrip("\n"))

    def wait_for(self, text: str, timeout_s: float = RUN_BOUND_S) -> None:
        """Wait until a line of stderr holds ``text``."""
        deadline = time.monotonic() + timeout_s
        while not any(text in line for line in self.lines):
            assert self.proc.poll() is None, f"ended ({self.proc.returncode}) before {text!r}:\n" + self.stderr
            assert time.monotonic() < deadline, f"no {text!r} in {timeout_s} s:\n" + self.stderr
            time.sleep(0.05)

    def interrupt(self) -> None:
        """Ctrl-C at a terminal: SIGINT to the whole process group."""
        os.killpg(self.proc.pid, signal.SIGINT)

    def end(self, timeout_s: float) -> tuple[int, float]:
        """The exit code and the seconds it took to end (killed past ``timeout_s``)."""
        t0 = time.monotonic()
        try:
            code = self.proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()
            pytest.fail(f"still running {timeout_s} s after the interrupt:\n" + self.stderr)
        self._reader.join(timeout=10)
        self.proc.stdout.close()
        return code, time.monotonic() - t0

    @property
    def stderr(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture()
def run_args(squad_dir, tmp_path):
    (tmp_path / "g").mkdir()
    golden = first_questions(squad_dir / "golden.jsonl", 15, tmp_path / "g")
    out = tmp_path / "out"
    # chunks of 128 characters: a first evaluation that embeds for seconds
    return ["--docs", str(squad_dir / "docs"), "--golden", str(golden), "--out", str(out), "--max-evals", "2",
            "--optimizer", "random", "--set", "chunk_size=128,256", "--set", "chunking_method=recursive",
            "--set", "search_mode=vector"], out


def _experiment(out):
    (experiment,) = (out / "experiments").iterdir()
    return experiment


def _stored_statuses(experiment):
    return {p.stem: json.loads(p.read_text(encoding="utf-8"))["status"]
            for p in (experiment / "results").glob("*.json")} if (experiment / "results").is_dir() else {}


def test_ctrl_c_stops_the_running_evaluation_at_once_and_resume_completes(run_args):
    args, out = run_args
    run = _Optimize(*args)
    run.wait_for("evaluating configuration")
    time.sleep(1.0)  # the evaluation is chunking and embedding
    run.interrupt()
    code, took = run.end(STOP_BOUND_S)
    assert code == 130, run.stderr
    assert took < STOP_BOUND_S
    experiment = _experiment(out)
    assert f"continue it with --resume {experiment.name}" in run.stderr
    assert "terminate called" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    # the evaluation cut short is no failed one: nothing stored for it, its trial still pending
    assert "failed" not in _stored_statuses(experiment).values(), _stored_statuses(experiment)
    progress = json.loads((experiment / "progress.json").read_text(encoding="utf-8"))
    assert progress["evaluations"] == 0

    resumed = _Optimize(*args[:6], "--resume", experiment.name)  # the same --docs, --golden and --out
    code, _ = resumed.end(RUN_BOUND_S)
    assert code == 0, resumed.stderr
    report = json.loads((experiment / "report.json").read_text(encoding="utf-8"))
    assert report["counts"]["evaluations"] == 2
    assert set(_stored_statuses(experiment).values()) == {"ok"}


def test_a_second_ctrl_c_quits_at_once_with_130(run_args):
    args, out = run_args
    run = _Optimize(*args)
    run.wait_for("evaluating configuration")
    time.sleep(0.5)
    run.interrupt()
    run.wait_for("stopping: waiting for the running evaluation to end (Ctrl-C again to quit at once)", STOP_BOUND_S)
    run.interrupt()
    code, took = run.end(STOP_BOUND_S)
    assert code == 130, run.stderr
    assert "terminate called" not in run.stderr and "Traceback" not in run.stderr, run.stderr
    experiment = _experiment(out)
    assert f"continue it with --resume {experiment.name}" in run.stderr
    assert "failed" not in _stored_statuses(experiment).values()
