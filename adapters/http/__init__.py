"""Outgoing HTTP: the aiohttp dispatcher and the guard that keeps it off private networks."""

from cronpilot.adapters.http.dispatcher import AiohttpDispatcher
from cronpilot.adapters.http.guard import check_url, is_allowed_address

__all__ = ["AiohttpDispatcher", "check_url", "is_allowed_address"]
