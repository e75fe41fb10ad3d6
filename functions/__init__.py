"""Azure Functions blueprints, one module per trigger family. Each function parses its input,
calls ``core`` and writes the result; no logic lives here.

The modules import at their top only what the app loads at start anyway (``core.settings``,
``core.errors``, ``core.redaction``, the report stores, ``functions.shared``); each function
imports the workflow it runs (``core.experiment``, ``core.evaluation``, the pages: numpy,
jsonschema, seconds to import) inside its body, so the app's cold start stays short."""
