"""Shared vocabulary every layer may use: value types, diagnostics, chat messages."""
