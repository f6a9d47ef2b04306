"""The ports package (`docs/decisions/0039-ports-split.md`): one module per area, every name
re-exported by the package, and the workers importing the modules they use."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

from cronpilot.domain import ports

ROOT = Path(__file__).resolve().parent.parent
WORKERS = ("scheduler", "planner", "runtime")


def _defined(module_name: str) -> set[str]:
    """The names a ports module defines (its protocols, dataclasses and aliases)."""
    tree = ast.parse(Path(importlib.import_module(module_name).__file__ or "").read_text())
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(target.id for target in node.targets if isinstance(target, ast.Name))
    return names


def test_the_package_re_exports_every_port_of_its_modules() -> None:
    modules = [info.name for info in pkgutil.iter_modules(ports.__path__, f"{ports.__name__}.")]
    assert len(modules) > 10
    defined = set().union(*(_defined(name) for name in modules))
    assert set(ports.__all__) == defined
    for name in defined:
        assert getattr(ports, name) is not None


def test_the_workers_import_ports_from_their_modules() -> None:
    offenders = [
        f"{path.relative_to(ROOT)}:{node.lineno}"
        for folder in WORKERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ImportFrom) and node.module == "cronpilot.domain.ports"
    ]
    assert offenders == []
