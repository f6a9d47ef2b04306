"""An in-memory store for unit tests and throwaway runs: plain dicts behind one lock."""

from cronpilot.adapters.memory.store import MemoryStore

__all__ = ["MemoryStore"]
