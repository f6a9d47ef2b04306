"""The container image (deploy/image/): built by its build script, then its entry point run
inside it (tests/e2e/deploy/in_image.py): as a non-root user, `--help`, a SQLite install migrated,
applied and listed, the demo, and the image's health check against a scheduler's probes.

Skipped, saying why, where podman, debootstrap or root is missing; failed instead when
CRONPILOT_REQUIRE_IMAGE=1 (`.ci/run` installs them and sets it). A cold build (debootstrap,
the dependencies' wheels) takes a few minutes; build.sh caches both, and later builds only
make cronpilot's wheel and the layers after it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from tests.e2e.deploy.in_image import HOME, Image, inspected, mounted_image, refused_run

ROOT = Path(__file__).resolve().parents[3]
BUILD = ROOT / "deploy" / "image" / "build.sh"
TAG = "localhost/cronpilot:test"
BUILD_SECONDS = 1500
WAIT_SECONDS = 60.0

pytestmark = [pytest.mark.slow, pytest.mark.timeout(BUILD_SECONDS + 300)]


def _missing() -> str | None:
    for tool in ("podman", "debootstrap", "unshare"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (.ci/run installs podman, buildah and debootstrap)"
    if os.geteuid() != 0:
        return "building the image needs root (debootstrap makes its root file system)"
    return None


@pytest.fixture(scope="module")
def image(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Image]:
    missing = _missing()
    if missing:
        if os.environ.get("CRONPILOT_REQUIRE_IMAGE") == "1":
            pytest.fail(missing)
        pytest.skip(missing)
    built = subprocess.run(
        [str(BUILD), TAG], capture_output=True, text=True, timeout=BUILD_SECONDS, check=False
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    config, health_check = inspected(TAG)
    home = tmp_path_factory.mktemp("home")
    uid, gid = (int(number) for number in config["User"].split(":"))
    os.chown(home, uid, gid)
    refused = refused_run(TAG)
    if refused is None:
        yield Image(TAG, config, health_check, home, None)
        return
    # Where the runtime cannot start a container (cgroups v1 hybrid, rlimits), say so once.
    print(f"podman run is refused here ({refused}); running in the image by chroot")
    with mounted_image(TAG) as root:
        yield Image(TAG, config, health_check, home, root)


def _settings(database: str, **more: str) -> dict[str, str]:
    return {
        "CRONPILOT_DATABASE_URL": f"sqlite:///{HOME}/{database}",
        "CRONPILOT_SECRET_KEY": Fernet.generate_key().decode("ascii"),
        **more,
    }


def test_cronpilot_is_the_entry_point_run_by_a_non_root_user(image: Image) -> None:
    uid, _ = image.config["User"].split(":")
    account = image.run(["getent", "passwd", uid])
    name, _, _, _, _, home, shell = account.stdout.strip().split(":")
    who = image.run(["id", "-un"])

    assert image.config["Entrypoint"] == ["cronpilot"]
    assert int(uid) != 0
    assert (name, home, shell) == ("cronpilot", HOME, "/usr/sbin/nologin")
    assert who.stdout.strip() == "cronpilot"
    assert image.config["WorkingDir"] == HOME


def test_help_runs_on_debian_s_python(image: Image) -> None:
    helped = image.cronpilot(["--help"])
    python = image.run(["python3", "-c", "import sys; print(sys.version_info[:2], sys.prefix)"])
    system = image.run(["cat", "/etc/os-release"])

    assert helped.returncode == 0, helped.stderr
    assert "scheduler" in helped.stdout
    assert python.stdout.strip() == "(3, 11) /opt/cronpilot"
    assert "VERSION_CODENAME=bookworm" in system.stdout


def test_a_sqlite_install_is_migrated_applied_listed_and_searched(image: Image) -> None:
    (image.home / "jobs.yaml").write_text(
        "jobs:\n"
        "  - name: shop\n"
        "    endpoints:\n"
        "      - name: stock\n"
        "        description: How many of each item the shop has in store.\n"
        "        url: https://shop.example/stock\n"
        "        interval: 1h\n"
    )
    settings = _settings("listed.db")

    upgraded = image.cronpilot(["db", "upgrade"], settings)
    applied = image.cronpilot(["apply", "-f", f"{HOME}/jobs.yaml"], settings)
    listed = image.cronpilot(["endpoints", "list", "--output", "json"], settings)
    # The search's model (wordllama, on numpy) loads from its wheel, offline.
    searched = image.cronpilot(["search", "items in store", "--output", "json"], settings)

    assert upgraded.returncode == 0, upgraded.stderr
    assert applied.returncode == 0, applied.stderr
    assert listed.returncode == 0, listed.stderr
    assert [(row["job"], row["name"], row["url"]) for row in json.loads(listed.stdout)] == [
        ("shop", "stock", "https://shop.example/stock")
    ]
    assert searched.returncode == 0, searched.stderr
    assert "shop/stock" in searched.stdout


def test_the_demo_runs_in_the_image(image: Image) -> None:
    demo = image.cronpilot(["demo", "--duration", "5", "--no-live"])

    assert demo.returncode == 0, demo.stderr
    totals = re.search(r"total: (\d+) runs on (\d+) endpoints, (\d+) succeeded", demo.stdout)
    assert totals is not None, demo.stdout
    assert int(totals[1]) > 0 and int(totals[3]) > 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _status(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=2) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as refused:
        return refused.code
    except OSError:
        return None


def test_the_health_check_passes_while_a_scheduler_serves_its_probes(image: Image) -> None:
    kind, *check = image.health_check
    port = _free_port()
    settings = _settings(
        "health.db",
        CRONPILOT_METRICS_HOST="127.0.0.1",
        CRONPILOT_METRICS_PORT=str(port),
        CRONPILOT_HEALTHCHECK_URL=f"http://127.0.0.1:{port}/healthz",
    )
    assert image.cronpilot(["db", "upgrade"], settings).returncode == 0
    before = image.run(check, settings)
    worker = subprocess.Popen(
        image.command([*image.config["Entrypoint"], "scheduler"], settings),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + WAIT_SECONDS
        while _status(f"http://127.0.0.1:{port}/readyz") != 200:
            assert worker.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        during = image.run(check, settings)
    finally:
        worker.send_signal(signal.SIGTERM)
        logged, _ = worker.communicate(timeout=WAIT_SECONDS)

    assert kind == "CMD"
    assert before.returncode != 0
    assert during.returncode == 0, during.stderr
    assert worker.returncode == 0, logged
