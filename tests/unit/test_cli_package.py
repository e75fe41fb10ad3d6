"""The ``ragtune`` command as a package (``core.cli``): every subcommand's ``--help`` works, and
importing the command (and building its parser) loads none of the heavy libraries, which each
command imports only when it runs."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from core.cli import build_parser, main

#: Every subcommand, in the order ``ragtune --help`` lists them (read from the README's
#: commands and the parser before it was split into modules).
SUBCOMMANDS = ("check", "evaluate", "evaluate-app", "compare-apps", "optimize", "compare-chunking", "sweep",
               "cutoff", "report", "template", "suggest", "draft", "serve")

#: Libraries that take seconds or hundreds of megabytes to import (DESIGN.md, rule 7).
HEAVY = ("unitxt", "pygam", "pymilvus", "torch", "onnxruntime", "plotly", "qdrant_client", "azure.search",
         "azure.functions", "psycopg", "boto3", "pandas", "transformers", "sentence_transformers")
#: The packages of the workflows (numpy, jsonschema and most of ``core``: seconds to import).
WORKFLOWS = ("core.evaluation", "core.experiment", "core.golden", "core.metrics", "core.models", "core.vectorstores")


def _subcommands() -> tuple[str, ...]:
    parser = build_parser()
    (sub,) = [a for a in parser._actions if a.dest == "command"]
    return tuple(sub.choices)


def test_the_parser_has_every_subcommand_in_order():
    assert _subcommands() == SUBCOMMANDS


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommands_help_exits_0(command, capsys):
    with pytest.raises(SystemExit) as stop:
        main([command, "--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: ragtune {command} ")
    assert "-h, --help" in out


def test_the_top_help_lists_every_subcommand(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--help"])
    assert stop.value.code == 0
    out = capsys.readouterr().out
    assert "{" + ",".join(SUBCOMMANDS) + "}" in out


PROBE = textwrap.dedent("""
    import json, sys
    import core.cli
    after_import = sorted(sys.modules)
    core.cli.build_parser()
    print(json.dumps({"import": after_import, "parser": sorted(sys.modules)}))
""")


def test_importing_the_command_loads_no_heavy_library():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    loaded = json.loads(done.stdout)
    assert "core.cli.parser" in loaded["import"]  # the probe sees the package's own modules
    for stage, modules in loaded.items():
        heavy = sorted(m for m in modules if any(m == h or m.startswith(h + ".") for h in HEAVY))
        assert heavy == [], f"after {stage}: {heavy}"
    # nor the workflows, which each command imports when it runs (the parser reads a few defaults
    # of golden authoring: that is after the import)
    workflows = sorted(m for m in loaded["import"] if m.startswith(WORKFLOWS))
    assert workflows == [], workflows


def test_python_m_core_cli_runs_the_command():
    done = subprocess.run([sys.executable, "-m", "core.cli", "--version"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ragtune ")
    done = subprocess.run([sys.executable, "-m", "core.cli", "no-such-command"], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 2  # argparse's own exit code for bad usage
    assert "invalid choice: 'no-such-command'" in done.stderr
