"""An endpoint's version (its ETag) follows what admins change, and reveals no secret."""

from __future__ import annotations

from dataclasses import replace

from cronpilot.domain.model import Endpoint
from cronpilot.domain.versions import endpoint_version
from tests.contract.builders import spec


def _endpoint(**overrides: object) -> Endpoint:
    return Endpoint(id="e", job_id="j", job_name="j", spec=spec("a", **overrides))


def test_a_declared_change_changes_the_version() -> None:
    base = _endpoint(headers={"Accept": "application/json"})
    assert endpoint_version(base) == endpoint_version(base)
    assert endpoint_version(base) != endpoint_version(_endpoint(headers={"Accept": "text/csv"}))
    assert endpoint_version(base) != endpoint_version(
        replace(base, spec=replace(base.spec, url="https://example.com/b"))
    )


def test_secret_values_do_not_enter_the_version() -> None:
    """A read-only token sees the ETag: it must not be a digest a secret could be guessed
    against offline."""
    one = _endpoint(
        headers={"Authorization": "Bearer s3cret"},
        url="https://bot:pw1@example.com/a?token=abc",
        notify=("https://hooks.example.com/x?sig=one",),
    )
    other = _endpoint(
        headers={"Authorization": "Bearer hunter2"},
        url="https://bot:pw2@example.com/a?token=xyz",
        notify=("https://hooks.example.com/x?sig=two",),
    )
    assert endpoint_version(one) == endpoint_version(other)
