"""A loopback server playing the endpoints of the demo (see `scenario` for the story)."""

from cronpilot.adapters.simulator.server import Simulator

__all__ = ["Simulator"]
