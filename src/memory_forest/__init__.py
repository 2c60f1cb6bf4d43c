"""Memory Forest: a verifiable local memory for long-running AI agents."""

__version__ = "0.1.0"
SCHEMA_VERSION = 1
