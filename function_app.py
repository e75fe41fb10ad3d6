"""The ragtune Azure Functions app: builds the app and registers the blueprints in ``functions/``.

Nothing else lives here. Heavy libraries are imported inside the functions that use them, so
the app's cold start stays short. ``DFApp`` is a ``FunctionApp`` that also hosts the Durable
Functions blueprint (experiments).
"""

import azure.durable_functions as df
import azure.functions as func

from functions.evaluations import bp as evaluations_bp
from functions.experiments import bp as experiments_bp
from functions.golden import bp as golden_bp
from functions.health import bp as health_bp
from functions.reports import bp as reports_bp

app = df.DFApp(http_auth_level=func.AuthLevel.FUNCTION)
app.register_functions(health_bp)
app.register_functions(golden_bp)
app.register_functions(reports_bp)
app.register_functions(experiments_bp)
app.register_functions(evaluations_bp)
