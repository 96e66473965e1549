"""Helpers shared by the test modules (no fixtures: those live in the conftest files)."""
