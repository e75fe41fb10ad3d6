"""The ragtune Azure Functions app: builds the app and registers the blueprints in ``functions/``.

Nothing else lives here. Heavy libraries are imported inside the functions that use them, so
the app's cold start stays short.
"""

import azure.functions as func

from functions.golden import bp as golden_bp
from functions.health import bp as health_bp

app = func.FunctionApp(http_auth_level=func.AuthLevel.FUNCTION)
app.register_functions(health_bp)
app.register_functions(golden_bp)
