"""Tests of the runtime that generated environments import."""
