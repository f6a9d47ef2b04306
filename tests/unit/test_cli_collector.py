"""The collector is paused for the CLI's imports only, and what they made is frozen."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from cronpilot.adapters.cli.collector import collector_paused


@pytest.fixture
def collector_state() -> Iterator[None]:
    was_enabled = gc.isenabled()
    yield
    gc.unfreeze()
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.usefixtures("collector_state")
def test_the_collector_is_off_inside_and_on_again_after() -> None:
    gc.enable()
    gc.unfreeze()
    with collector_paused():
        assert not gc.isenabled()
        made = [object() for _ in range(10)]
    assert gc.isenabled()
    assert gc.get_freeze_count() >= len(made)


@pytest.mark.usefixtures("collector_state")
def test_a_collector_switched_off_before_stays_off() -> None:
    gc.disable()
    with collector_paused():
        pass
    assert not gc.isenabled()


@pytest.mark.usefixtures("collector_state")
def test_an_error_inside_still_switches_the_collector_back_on() -> None:
    gc.enable()
    with pytest.raises(RuntimeError), collector_paused():
        raise RuntimeError("import failed")
    assert gc.isenabled()
