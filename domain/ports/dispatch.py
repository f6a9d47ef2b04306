"""The calls a worker makes: endpoint runs and webhook deliveries over HTTP, e-mail over SMTP."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from cronpilot.domain.alerts.notify_targets import MailMessage, SmtpServer
    from cronpilot.domain.model import HttpRequest, Response


class Dispatcher(Protocol):
    async def dispatch(self, request: HttpRequest) -> Response:
        """Make the call. Endpoint failures (timeouts, resets, refused addresses, bad bodies)
        are reported in the `Response`, never raised."""
        ...

    async def close(self) -> None: ...


class Mailer(Protocol):
    """Sends the e-mail of an `email` notification target (`domain.alerts.notify_targets`)."""

    async def send(
        self, server: SmtpServer, message: MailMessage, timeout_seconds: float
    ) -> str | None:
        """Send `message` through `server` to its recipients, within `timeout_seconds`; None
        once the server took it, else why not in one line (never a secret). The server's
        failures (refused, silent, unreachable, a refused address) are returned, never raised."""
        ...
