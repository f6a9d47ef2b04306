"""setuptools' build backend, refusing to build from a checkout whose `cronpilot/` links are
plain files (docs/decisions/0012-namespaced-package.md).

Git writes a link as a small text file holding its target when `core.symlinks` is false (the
default on Windows); setuptools would then build a wheel holding `cronpilot/__init__.py` alone,
and an editable install would import nothing. Every hook that builds or describes the
distribution checks the links first and stops with one line saying what to do.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from pathlib import Path
from typing import ParamSpec, TypeVar

from setuptools import build_meta
from setuptools.build_meta import (
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
)

__all__ = [
    "build_editable",
    "build_sdist",
    "build_wheel",
    "get_requires_for_build_editable",
    "get_requires_for_build_sdist",
    "get_requires_for_build_wheel",
    "prepare_metadata_for_build_editable",
    "prepare_metadata_for_build_wheel",
]

PACKAGE = Path("cronpilot")
P = ParamSpec("P")
R = TypeVar("R")


def broken_links(package: Path = PACKAGE) -> list[str]:
    """The entries of `package` (its `__init__.py` aside) that are not folders."""
    return sorted(
        entry.as_posix()
        for entry in package.iterdir()
        if entry.name != "__init__.py" and not entry.is_dir()
    )


def _checked(hook: Callable[P, R]) -> Callable[P, R]:
    """`hook`, run once the links are found to be links."""

    @wraps(hook)
    def check_then_run(*args: P.args, **kwargs: P.kwargs) -> R:
        broken = broken_links()
        if broken:
            raise SystemExit(
                f"{broken[0]} is a plain file, not a link to its layer folder (a checkout made "
                "without symlinks): clone with `git clone -c core.symlinks=true`, or run "
                "`git config core.symlinks true && git checkout HEAD -- cronpilot` here"
            )
        return hook(*args, **kwargs)

    return check_then_run


build_wheel = _checked(build_meta.build_wheel)
build_editable = _checked(build_meta.build_editable)
build_sdist = _checked(build_meta.build_sdist)
prepare_metadata_for_build_wheel = _checked(build_meta.prepare_metadata_for_build_wheel)
prepare_metadata_for_build_editable = _checked(build_meta.prepare_metadata_for_build_editable)
