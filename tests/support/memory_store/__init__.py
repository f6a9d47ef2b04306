"""The tests' in-memory store: plain dicts behind one lock. The contract suite runs it beside
SQLite and PostgreSQL; it lives here, out of the wheel, and no product module imports it."""

from tests.support.memory_store.store import MemoryStore

__all__ = ["MemoryStore"]
