"""`cronpilot scheduler` as a real process, for tests that signal and kill it."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from cryptography.fernet import Fernet

from cronpilot.adapters.crypto import FernetCipher
from cronpilot.adapters.sql import SqlStore, open_sql_store


class SchedulerProcesses:
    """Starts scheduler processes sharing one database and one secret key; logs go to files in
    `workdir` (a pipe nobody reads could fill and stall a worker). Each runs with Python's fault
    handler on: a process that will not stop dumps its threads' stacks into its log."""

    def __init__(self, database_url: str, workdir: Path, **settings: object) -> None:
        self.key = Fernet.generate_key().decode("ascii")
        self.cipher = FernetCipher(self.key)
        self._workdir = workdir
        self._env = {
            **os.environ,
            "CRONPILOT_DATABASE_URL": database_url,
            "CRONPILOT_SECRET_KEY": self.key,
            "CRONPILOT_ALLOWED_NETWORKS": "127.0.0.1/32",
            "PYTHONFAULTHANDLER": "1",
            **{f"CRONPILOT_{name.upper()}": str(value) for name, value in settings.items()},
        }
        self.started: list[asyncio.subprocess.Process] = []

    async def start(self, worker_id: str) -> asyncio.subprocess.Process:
        with (self._workdir / f"{worker_id}.log").open("wb") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "cronpilot.adapters.cli.main",
                "scheduler",
                "--worker-id",
                worker_id,
                cwd=self._workdir,
                env=self._env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        self.started.append(process)
        return process

    async def cli(self, *args: str) -> int:
        """Run another `cronpilot` command against the same database; its output goes to
        `cli.log`. Returns its exit code."""
        with (self._workdir / "cli.log").open("ab") as log:
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "cronpilot.adapters.cli.main",
                *args,
                cwd=self._workdir,
                env=self._env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        self.started.append(process)
        return await process.wait()

    async def cli_output(self, *args: str) -> tuple[int, str, str]:
        """Run another `cronpilot` command against the same database, without blocking the
        loop (a test's endpoint server must go on answering). Returns its exit code, stdout
        and stderr."""
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "cronpilot.adapters.cli.main",
            *args,
            cwd=self._workdir,
            env=self._env,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        self.started.append(process)
        out, err = await process.communicate()
        assert process.returncode is not None
        return process.returncode, out.decode(), err.decode()

    async def exited(
        self, process: asyncio.subprocess.Process, worker_id: str, within: float
    ) -> int:
        """`exited` for one of these processes, with its log."""
        return await exited(process, self._workdir / f"{worker_id}.log", within)

    def log_of(self, worker_id: str) -> str:
        return (self._workdir / f"{worker_id}.log").read_text()

    async def kill_all(self) -> None:
        """Kill whatever is still running (a failed test must not leave workers behind)."""
        for process in self.started:
            if process.returncode is None:
                process.kill()
                await process.wait()


ABORT_SECONDS = 10.0
"""How long an aborted process may take to write its stacks and die before it is killed."""


async def exited(process: asyncio.subprocess.Process, log: Path, within: float) -> int:
    """The exit code of `process`, signalled to stop, whose output goes to `log`. One still
    running after `within` seconds fails the test with its log and, from the fault handler
    (PYTHONFAULTHANDLER=1), where each of its threads was (SIGABRT): a hang seen once in CI
    says where it hung."""
    try:
        async with asyncio.timeout(within):
            return await process.wait()
    except TimeoutError:
        process.send_signal(signal.SIGABRT)
        try:
            async with asyncio.timeout(ABORT_SECONDS):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()
        written = await asyncio.to_thread(log.read_text)
        raise AssertionError(
            f"still running {within:g} s after it was told to stop:\n{written}"
        ) from None


@asynccontextmanager
async def scheduler_processes(
    database_url: str, workdir: Path, **settings: object
) -> AsyncIterator[SchedulerProcesses]:
    """`SchedulerProcesses` whose survivors are killed on the way out, a failed test's too."""
    made = SchedulerProcesses(database_url, workdir, **settings)
    try:
        yield made
    finally:
        await made.kill_all()


@asynccontextmanager
async def store_of(database_url: str, processes: SchedulerProcesses) -> AsyncIterator[SqlStore]:
    """The SQL store the processes write, opened with their secret key."""
    opened = await open_sql_store(database_url, processes.cipher)
    try:
        yield opened
    finally:
        await opened.close()
