"""`cronpilot demo --serve` as a real process: it prints the console's URL and tokens, the
console shows the demo's endpoints while it runs, and Ctrl-C ends it after its summary."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

READY_SECONDS = 60
URL = re.compile(r"^console: (http://127\.0\.0\.1:\d+)/console/ ")
TOKEN = re.compile(r"^  (admin|read) token: (cp_\S+)$")


@pytest.mark.slow
def test_demo_serve_shows_the_demo_in_the_console_until_ctrl_c(tmp_path: Path) -> None:
    env = {name: value for name, value in os.environ.items() if not name.startswith("CRONPILOT_")}
    env.update(TMPDIR=str(tmp_path), HOME=str(tmp_path))
    command = ["demo", "--serve", "--port", "0", "--duration", "3", "--no-live"]
    demo = subprocess.Popen(
        [sys.executable, "-m", "cronpilot.adapters.cli.main", *command],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        assert demo.stdout is not None
        url, tokens = None, {}
        for line in demo.stdout:
            if (found := URL.match(line)) is not None:
                url = found.group(1)
            elif (token := TOKEN.match(line.rstrip("\n"))) is not None:
                tokens[token.group(1)] = token.group(2)
            if len(tokens) == 2:
                break
        assert url is not None and set(tokens) == {"admin", "read"}
        with httpx.Client(base_url=url, timeout=10) as browser:
            signed_in = browser.post(
                "/console/login", data={"token": tokens["read"], "next": "/console/endpoints"}
            )
            assert signed_in.status_code == 303
            page = browser.get("/console/endpoints")
        assert page.status_code == 200
        assert "flash-sale/fraud_score" in page.text and "showcase/flaky" in page.text
        # The summary comes when the demo's time is over; the console stays up after it.
        rest = []
        for line in demo.stdout:
            rest.append(line)
            if "the console stays at" in line:
                break
        assert any(line.startswith("total: ") for line in rest), "".join(rest)
        demo.send_signal(signal.SIGINT)
        assert demo.wait(READY_SECONDS) == 0
    finally:
        if demo.poll() is None:
            demo.kill()
        demo.communicate()
