"""`Mailer` over SMTP (the standard library's `smtplib`, in a thread): the e-mail alerts of
`email` notification targets.

The address guard applies as it does to every HTTP call: the server's name is resolved here and
each address checked before it is connected to, so that DNS cannot point a target at a private
address the allowlist does not name. Every blocking step waits at most the notifier's timeout,
and the whole delivery is bounded by it too, so a server that never answers costs one timeout
and a retry, never a stuck notifier.
"""

from __future__ import annotations

import asyncio
import ipaddress
import smtplib
import socket
import ssl
from collections.abc import Sequence
from datetime import UTC, datetime
from email.message import EmailMessage
from email.utils import format_datetime
from uuid import uuid4

from cronpilot.adapters.http.guard import AddressPolicy
from cronpilot.domain.alerts.notify_targets import MailMessage, SmtpServer
from cronpilot.domain.ports import Mailer


class _RefusedAddress(OSError):
    """Every address of the server's name is refused by the guard."""


class _GuardedSMTP(smtplib.SMTP):
    """`smtplib.SMTP` that connects only to an address the policy allows; the name stays the
    server's, so that STARTTLS checks the certificate against it."""

    def __init__(self, policy: AddressPolicy, host: str, timeout: float) -> None:
        self._policy = policy
        # The machine's name for EHLO: `getfqdn`, the default, may wait on reverse DNS.
        super().__init__(timeout=timeout, local_hostname=socket.gethostname())
        self._host = host

    def _get_socket(self, host: str, port: int, timeout: float) -> socket.socket:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        reasons = []
        for family, kind, proto, _, address in found:
            reason = self._policy.refusal(ipaddress.ip_address(address[0]))
            if reason is not None:
                reasons.append(reason)
                continue
            connection = socket.socket(family, kind, proto)
            connection.settimeout(timeout)
            try:
                connection.connect(address)
            except OSError:
                connection.close()
                raise
            return connection
        raise _RefusedAddress("; ".join(dict.fromkeys(reasons)) or "no address")


class SmtpMailer(Mailer):
    def __init__(self, allowed_networks: Sequence[str]) -> None:
        self._policy = AddressPolicy.from_networks(allowed_networks)

    async def send(
        self, server: SmtpServer, message: MailMessage, timeout_seconds: float
    ) -> str | None:
        mail = EmailMessage()
        mail["Subject"] = message.subject
        mail["From"] = server.sender
        mail["To"] = ", ".join(server.to)
        # RFC 5322 asks for both; the id stays the same on a retry, so a copy is recognised.
        mail["Date"] = format_datetime(message.at or datetime.now(UTC))
        domain = server.sender.rpartition("@")[2] or server.host
        mail["Message-ID"] = f"<cronpilot.{message.ident or uuid4().hex}@{domain}>"
        mail.set_content(message.text)
        where = f"SMTP server {server.host}:{server.port}"
        try:
            async with asyncio.timeout(timeout_seconds):
                await asyncio.to_thread(self._send, server, mail, timeout_seconds)
        except TimeoutError:
            return f"{where} did not answer within {timeout_seconds:g}s"
        except _RefusedAddress as refused:
            return f"{where} refused by the address guard: {refused}"
        except smtplib.SMTPResponseException as answer:
            said = answer.smtp_error
            text = said.decode(errors="replace") if isinstance(said, bytes) else str(said)
            return f"{where} answered {answer.smtp_code} {text}".strip()
        except (smtplib.SMTPException, OSError) as exc:
            return f"{where}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}"
        return None

    def _send(self, server: SmtpServer, mail: EmailMessage, timeout_seconds: float) -> None:
        with _GuardedSMTP(self._policy, server.host, timeout_seconds) as smtp:
            smtp.connect(server.host, server.port)
            if server.starttls:
                smtp.starttls(context=ssl.create_default_context())
            if server.username is not None:
                smtp.login(server.username, server.password or "")
            smtp.send_message(mail, from_addr=server.sender, to_addrs=list(server.to))
