"""Reading and checking a golden file loads no search, at run time too.

The folder-order test (``tests/unit/test_import_graph.py``) reads the imports of each module; a
package's ``__init__`` pulls in more than the module named, so this test imports the reader in
a fresh interpreter, reads and checks a file, and lists what was loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
#: Packages that search, embed or score, or that build them: reading a golden file needs none.
SEARCH = ("core.vectorstores", "core.models", "core.targets", "core.evaluation", "core.experiment", "core.rag",
          "core.settings", "core.chunking", "core.metrics")

PROBE = """
import json, sys
from core.golden import check_golden, read_golden
golden = read_golden(sys.argv[1])
check = check_golden(sys.argv[1])
print(json.dumps({"questions": [q.id for q in golden.questions], "ok": check.ok,
                  "modules": sorted(m for m in sys.modules if m.startswith("core"))}))
"""


def test_reading_and_checking_a_golden_file_loads_no_search(tmp_path):
    path = tmp_path / "golden.jsonl"
    path.write_text('{"id": "q1", "question": "Who pays?", "expected": ["handbook.pdf#page=3"]}\n'
                    '{"id": "q2", "question": "When?", "expected": ["faq.md"], "evidence": ["paid on the first day"]}\n',
                    encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", PROBE, str(path)], capture_output=True, text=True, cwd=ROOT,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["questions"] == ["q1", "q2"] and out["ok"] is True  # the file was read and checked (two rows by hand)
    loaded = [m for m in out["modules"] if any(m == p or m.startswith(p + ".") for p in SEARCH)]
    assert loaded == []
    assert "core.golden.reader" in out["modules"]  # the probe saw the reader itself
