"""A loopback server playing the endpoints of the demo (see `scenario` for the story)."""

from cronpilot.harness.simulator.server import Simulator

__all__ = ["Simulator"]
