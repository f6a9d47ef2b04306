"""Commands run inside cronpilot's image: with `podman run` where this machine can start a
container, else in the image's own file system (`podman image mount`) through `chroot`, as the
image's user, with its environment and working folder. Either way the root file system is
read-only, /tmp is a fresh tmpfs and the user's home is a host folder: what the Kubernetes
manifests give a pod (readOnlyRootFilesystem)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RUN_SECONDS = 120
HOME = "/var/lib/cronpilot"
# The namespace of the chroot keeps the mounts to itself: they go when the command ends.
_CHROOT = (
    'root=$1 home=$2 user=$3 workdir=$4; shift 4; mount -t proc proc "$root/proc"'
    ' && mount --rbind /dev "$root/dev" && mount -t tmpfs tmpfs "$root/tmp"'
    f' && mount --bind "$home" "$root{HOME}"'
    ' && exec chroot --userspec="$user" "$root" /usr/bin/env -i -C "$workdir" "$@"'
)


@dataclass(frozen=True)
class Image:
    tag: str
    config: dict[str, Any]
    """The image's run configuration: user, entry point, environment, working folder."""
    health_check: list[str]
    """Its HEALTHCHECK's test, e.g. ["CMD", "python3", …]; empty when it has none."""
    home: Path
    """The host folder mounted as the user's home, owned by the image's user."""
    mounted: Path | None
    """The image's root file system where commands run by chroot; None under `podman run`."""

    def command(self, argv: list[str], env: dict[str, str] | None = None) -> list[str]:
        """The host command line that runs `argv` (a path in the image and its arguments)."""
        extra = env or {}
        if self.mounted is None:
            return [
                *("podman", "run", "--rm", "--network", "host", "--read-only"),
                *("--tmpfs", "/tmp", "--volume", f"{self.home}:{HOME}"),
                *(f"--env={name}={value}" for name, value in extra.items()),
                *("--entrypoint", argv[0], self.tag, *argv[1:]),
            ]
        variables = dict(value.split("=", 1) for value in self.config["Env"])
        variables |= {"HOME": HOME, **extra}
        return [
            *("unshare", "--mount", "--", "sh", "-c", _CHROOT, "sh", str(self.mounted)),
            *(str(self.home), self.config["User"], self.config["WorkingDir"]),
            *(f"{name}={value}" for name, value in variables.items()),
            *argv,
        ]

    def run(
        self, argv: list[str], env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.command(argv, env),
            capture_output=True,
            text=True,
            timeout=RUN_SECONDS,
            check=False,
        )

    def cronpilot(
        self, args: list[str], env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        """The image's entry point with `args`."""
        return self.run([*self.config["Entrypoint"], *args], env)


def inspected(tag: str) -> tuple[dict[str, Any], list[str]]:
    """`tag`'s run configuration and its health check's test."""
    done = subprocess.run(
        ["podman", "image", "inspect", tag], capture_output=True, text=True, timeout=60, check=True
    )
    details = json.loads(done.stdout)[0]
    return details["Config"], (details.get("Healthcheck") or {}).get("Test", [])


def refused_run(tag: str) -> str | None:
    """Why `podman run` cannot start a container of `tag` here (the runtime's last line), or
    None when it can."""
    done = subprocess.run(
        ["podman", "run", "--rm", "--network", "host", tag, "--help"],
        capture_output=True,
        text=True,
        timeout=RUN_SECONDS,
        check=False,
    )
    lines = done.stderr.strip().splitlines()
    return None if done.returncode == 0 else (lines[-1] if lines else f"exit {done.returncode}")


@contextmanager
def mounted_image(tag: str) -> Iterator[Path]:
    done = subprocess.run(
        ["podman", "image", "mount", tag], capture_output=True, text=True, timeout=60, check=True
    )
    try:
        yield Path(done.stdout.strip())
    finally:
        subprocess.run(
            ["podman", "image", "unmount", tag], capture_output=True, timeout=60, check=False
        )
