"""A command group that imports a subcommand's module only when that subcommand is needed.

Every command module imports what its commands use (the store, rich, YAML, networkx…), and
typer turns every function signature into click parameters: loading all of them costs each
command the start-up of all the others. `cronpilot endpoints list` loads `endpoints` alone;
The help of the group lists every command with its help's first paragraph: a command not yet
built is shown by a stand-in holding the help it will have (`LazyGroup.helps`), so `cronpilot
--help` loads none. Completing a command name loads the commands it shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, MutableMapping
from typing import Any, ClassVar

from typer.core import TyperCommand, TyperGroup

# Click's `Command`, which typer vendors under a private name (see `OutputCommand`).
Command = Any
Loader = Callable[[], Command]


class LazyCommands(MutableMapping[str, Command]):
    """Subcommands by name, in the order given; each is built by its loader on first use and
    kept, so that what a caller changes on it (a test's callback) stays."""

    def __init__(self, loaders: Mapping[str, Loader]) -> None:
        self._loaders = dict(loaders)
        self._built: dict[str, Command] = {}

    def __getitem__(self, name: str) -> Command:
        if name not in self._built:
            self._built[name] = self._loaders[name]()
        return self._built[name]

    def __setitem__(self, name: str, command: Command) -> None:
        # Click's `add_command`: a command given ready-made.
        self._loaders[name] = lambda: command
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._loaders[name]
        self._built.pop(name, None)

    @property
    def built(self) -> Mapping[str, Command]:
        """The commands built so far."""
        return self._built

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaders)

    def __len__(self) -> int:
        return len(self._loaders)


class LazyGroup(TyperGroup):
    """A typer group whose subcommands are the class's `loaders`; give it as `typer.Typer(cls=…)`
    to a subclass that names them."""

    loaders: ClassVar[Mapping[str, Loader]] = {}
    helps: ClassVar[Mapping[str, Callable[[], str | None]]] = {}
    """Command name → the help its command will have once built, or None when unknown (then
    the help loads it)."""

    def __init__(self, **attrs: Any) -> None:
        super().__init__(**attrs)
        self.commands = LazyCommands(self.loaders)

    def list_commands(self, ctx: Any) -> list[str]:
        # The names alone: typer's own version builds every command to list their names.
        return list(self.commands)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        # Listing a command needs its name and help only (it is neither hidden, deprecated nor
        # in a panel of its own): a stand-in spares importing its module.
        commands = self.commands
        self.commands = {name: self._listed(commands, name) for name in commands}
        try:
            super().format_help(ctx, formatter)
        finally:
            self.commands = commands

    def _listed(self, commands: MutableMapping[str, Command], name: str) -> Command:
        # A command built already is shown as it is (a test may have changed it).
        built = commands.built if isinstance(commands, LazyCommands) else commands
        if name in built or name not in self.helps:
            return commands[name]
        help_text = self.helps[name]()
        return commands[name] if help_text is None else TyperCommand(name=name, help=help_text)
