"""The class of every CLI command: `--json` is read as `--output json`.

Apart from `output.py` (which imports the domain's model and schedules to print them) because
`main.py` gives it to every command, `cronpilot --help` included.
"""

from __future__ import annotations

from typing import Any

from typer.core import TyperCommand


class OutputCommand(TyperCommand):
    """A command that reads `--json` as `--output json` when it has `--output` (`--json` came
    first and scripts use it). Tokens after `--` are arguments, never options."""

    # `ctx` is click's Context, which typer has vendored under a private name since 0.20.
    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if any(param.name == "output" for param in self.params):
            end = args.index("--") if "--" in args else len(args)
            args = [
                "--output=json" if arg == "--json" and i < end else arg
                for i, arg in enumerate(args)
            ]
        return super().parse_args(ctx, args)
