"""`cronpilot --help` lists every command by a stand-in holding the help the command will have
(`LazyGroup.helps`), read from `COMMANDS` or its function's docstring without importing it: each
stand-in must list exactly as its command, built, would."""

from __future__ import annotations

import pytest
import typer

from cronpilot.adapters.cli.lazy_group import LazyCommands
from cronpilot.adapters.cli.main import COMMANDS, CronpilotGroup, build_app


@pytest.mark.parametrize("name", list(COMMANDS))
def test_a_command_s_stand_in_holds_the_help_it_has_once_built(name: str) -> None:
    command = CronpilotGroup.loaders[name]()
    assert CronpilotGroup.helps[name]() == command.help
    # What else the listing reads of a command: none of these may set it apart.
    assert command.short_help is None
    assert not command.hidden
    assert not command.deprecated
    # typer's placeholder for "no panel" is false, as the listing reads it.
    assert not getattr(command, "rich_help_panel", None)


def test_the_help_lists_with_stand_ins_what_it_lists_with_every_command_built(
    capsys: pytest.CaptureFixture[str],
) -> None:
    group = typer.main.get_command(build_app())
    assert isinstance(group, CronpilotGroup)
    assert isinstance(group.commands, LazyCommands)
    with typer.Context(group, info_name="cronpilot") as ctx:
        group.get_help(ctx)  # typer prints it with rich
        listed = capsys.readouterr().out
        assert group.commands.built == {}
        for name in group.commands:
            group.commands[name]  # built, and kept, by looking it up
        group.get_help(ctx)
    assert "Serve the HTTP API" in listed
    assert capsys.readouterr().out == listed
