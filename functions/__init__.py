"""Azure Functions blueprints, one module per trigger family. Each function parses its input,
calls ``core`` and writes the result; no logic lives here."""
