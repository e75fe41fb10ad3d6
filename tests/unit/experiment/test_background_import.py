"""The runner's background import: the module ends up imported, once, and a module that cannot
be imported only logs (the import that needs it raises where it is handled)."""

from __future__ import annotations

import logging
import sys

from core.experiment.runner import _import_in_background


def test_the_module_is_imported_in_a_daemon_thread():
    sys.modules.pop("colorsys", None)  # a small standard module nothing here has imported
    thread = _import_in_background("colorsys")
    assert thread.daemon
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert "colorsys" in sys.modules  # imported by the thread, before anything here imports it
    loaded = sys.modules["colorsys"]
    import colorsys  # the same module object, not a second import

    assert colorsys is loaded
    assert colorsys.rgb_to_hsv(1.0, 0.0, 0.0) == (0.0, 1.0, 1.0)  # red: hue 0, full saturation and value


def test_a_missing_module_only_logs(caplog):
    with caplog.at_level(logging.DEBUG, logger="core.experiment.runner"):
        thread = _import_in_background("no_such_module_for_ragtune")
        thread.join(timeout=30)
    assert not thread.is_alive()
    assert "no_such_module_for_ragtune" not in sys.modules
    assert any("background import of no_such_module_for_ragtune failed: ModuleNotFoundError" in r.getMessage()
               for r in caplog.records)


def test_a_function_of_the_module_is_called_once_it_is_imported(tmp_path, monkeypatch):
    (tmp_path / "ragtune_bg_probe.py").write_text("calls = []\ndef load():\n    calls.append('loaded')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("ragtune_bg_probe", None)
    thread = _import_in_background("ragtune_bg_probe:load")
    thread.join(timeout=30)
    import ragtune_bg_probe

    assert ragtune_bg_probe.calls == ["loaded"]


def test_the_answer_metrics_preload_fetches_the_unitxt_metrics():
    import core.metrics.unitxt_metrics as um
    from core.experiment.runner import ANSWER_METRICS_MODULE

    thread = _import_in_background(ANSWER_METRICS_MODULE)
    thread.join(timeout=120)
    assert "unitxt.metrics" in sys.modules and "unitxt.eval_utils" in sys.modules
    assert set(um.UNITXT_METRICS.values()) <= set(um._METRICS)
