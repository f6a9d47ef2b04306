"""A loopback server playing the endpoints of the demo (see `scenario` for the story)."""

from adapters.simulator.server import Simulator

__all__ = ["Simulator"]
