"""The servers a command starts, as processes: TLS files that cannot be loaded and a port in
use end `serve`, `mcp --http` and `scheduler --metrics-port` with one line and exit 2, before
anything starts; TLS files that can be loaded serve HTTPS."""

from __future__ import annotations

import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from tests.e2e.conftest import Cli

START_SECONDS = 30


def _error(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    return lines[0]


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


@pytest.fixture
def tls(tmp_path: Path) -> dict[str, Path]:
    """A self-signed certificate for 127.0.0.1 and its key, another key, a file of text and a
    folder where a file is expected."""
    key, other = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(days=1))
        .not_valid_after(now + timedelta(days=1))
        .sign(key, hashes.SHA256())
    )
    files = {
        "cert": cert.public_bytes(serialization.Encoding.PEM),
        "key": _key_pem(key),
        "other-key": _key_pem(other),
        "text": b"not a certificate\n",
    }
    paths = {name: tmp_path / f"{name}.pem" for name in files}
    for name, content in files.items():
        paths[name].write_bytes(content)
    paths["folder"] = tmp_path / "folder.pem"
    paths["folder"].mkdir()
    return paths


@pytest.fixture
def cli(cli_for: Callable[..., Cli], sqlite_url: str) -> Cli:
    return cli_for(sqlite_url)


@pytest.mark.parametrize(
    ("cert", "key", "says"),
    [
        ("missing", "key", "--tls-cert: cannot read"),
        ("cert", "folder", "--tls-key: cannot read"),
        ("cert", "other-key", "are not a PEM certificate chain and its private key"),
        ("text", "key", "are not a PEM certificate chain and its private key"),
    ],
)
@pytest.mark.parametrize("command", [["serve"], ["mcp", "--http", "--token", "any"]])
def test_tls_files_that_cannot_be_loaded_exit_2_with_one_line(
    *, cli: Cli, tls: dict[str, Path], command: list[str], cert: str, key: str, says: str
) -> None:
    cert_path = tls.get(cert, tls["cert"].with_name("missing.pem"))

    failed = cli(*command, "--tls-cert", str(cert_path), "--tls-key", str(tls[key]), expect=2)

    assert says in _error(failed.stderr)
    assert "BEGIN" not in failed.stderr


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port something else listens on."""
    with socket.create_server(("127.0.0.1", 0)) as other:
        yield int(other.getsockname()[1])


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (["serve", "--port"], "--port"),
        (["mcp", "--http", "--token", "any", "--port"], "--port"),
        (["scheduler", "--metrics-port"], "--metrics-port"),
    ],
)
def test_a_port_in_use_exits_2_with_one_line(
    cli: Cli, taken: int, command: list[str], option: str
) -> None:
    failed = cli(*command, str(taken), expect=2, timeout=START_SECONDS)

    assert _error(failed.stderr).startswith(
        f"error: {option}: cannot listen on 127.0.0.1:{taken}: "
    )


def test_tls_files_that_load_serve_https(cli: Cli, tls: dict[str, Path]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = int(probe.getsockname()[1])
    args = ["serve", "--port", str(port), "--tls-cert", str(tls["cert"])]
    server = subprocess.Popen(
        [sys.executable, "-m", "cronpilot.adapters.cli.entry", *args, "--tls-key", str(tls["key"])],
        cwd=cli.home,
        env=cli.env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    context = ssl.create_default_context(cafile=str(tls["cert"]))
    context.check_hostname = False
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(
                    f"https://127.0.0.1:{port}/healthz", context=context, timeout=2
                ) as answer:
                    status = answer.status
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None
                time.sleep(0.1)
    finally:
        server.send_signal(signal.SIGTERM)
        _, stderr = server.communicate(timeout=START_SECONDS)

    assert status == 200
    assert "Traceback" not in stderr
