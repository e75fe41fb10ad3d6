"""``POST /api/golden/check``: check a golden file sent in the request body.

The body is the golden JSONL itself; the answer is the check result as JSON (status 200 when
the file can be run, 422 when it has errors), every problem with its line number.
"""

import json
import os
import tempfile

import azure.functions as func

bp = func.Blueprint()

#: Largest golden file accepted in a request body, in bytes.
MAX_BODY_BYTES = 20 * 1024 * 1024


@bp.route(route="golden/check", methods=["POST"])
def check_golden_http(req: func.HttpRequest) -> func.HttpResponse:
    """Check the golden JSONL in the body; returns ``GoldenCheck.to_dict()`` as JSON.

    Status: 200 when the file can be run, 422 when it has errors, 413 when the body is larger
    than :data:`MAX_BODY_BYTES`.
    """
    from core.golden import check_golden

    body = req.get_body()
    if len(body) > MAX_BODY_BYTES:
        return func.HttpResponse(
            json.dumps({"error": f"golden file larger than {MAX_BODY_BYTES} bytes"}), status_code=413,
            mimetype="application/json",
        )
    name = req.params.get("name") or "golden.jsonl"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, os.path.basename(name) or "golden.jsonl")
        with open(path, "wb") as fh:
            fh.write(body)
        result = check_golden(path).to_dict()
    result["path"] = name
    return func.HttpResponse(json.dumps(result), status_code=200 if result["ok"] else 422, mimetype="application/json")
