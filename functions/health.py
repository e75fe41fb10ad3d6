"""``GET /api/health``: the app is up, and which ragtune version it runs."""

import json

import azure.functions as func

from core import __version__

bp = func.Blueprint()


@bp.route(route="health", methods=["GET"], auth_level=func.AuthLevel.ANONYMOUS)
def health(req: func.HttpRequest) -> func.HttpResponse:
    """Return ``{"status": "ok", "version": "<ragtune version>"}`` with status 200."""
    return func.HttpResponse(
        json.dumps({"status": "ok", "version": __version__}), status_code=200, mimetype="application/json"
    )
