"""Test helpers shared across test packages (loopback OpenAI-compatible server, ...)."""
