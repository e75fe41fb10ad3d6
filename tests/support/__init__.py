"""Test support: a local OpenAI-compatible server."""
