"""Quiet, bounded records through the API (issue 21, item 3): the list routes narrow to
`?since=&until=` as the CLI's options do, a bad bound is a 400 problem, and an endpoint says
when a planner last looked at it."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.integration.api.conftest import Api
from tests.support.records import REF, two_of_each

ROUTES = {
    "runs": ("/runs", {"endpoint": REF}),
    "sessions": ("/sessions", {}),
    "proposals": ("/proposals", {}),
    "notifications": ("/notifications", {}),
}


@pytest.mark.parametrize("kind", ROUTES)
async def test_a_list_route_narrows_to_a_window(api: Api, kind: str) -> None:
    now = api.clock.now()
    made = (await two_of_each(api.store, now))[kind]
    between = (now - timedelta(hours=2)).isoformat()
    path, params = ROUTES[kind]
    windows = [{"since": "2h"}, {"until": "2h"}, {"since": "4h", "until": between}, {}]

    async with api.client() as client:
        pages = [(await client.get(path, params=params | w)).json() for w in windows]

    ids = [[item["id"] for item in page["items"]] for page in pages]
    assert ids == [[made.recent], [made.old], [made.old], [made.recent, made.old]]


@pytest.mark.parametrize(
    ("window", "detail"),
    [
        ({"since": "yesterday"}, "since 'yesterday' is neither an ISO time"),
        ({"until": "1e400d"}, "until '1e400d' is neither an ISO time"),
        ({"since": "1h", "until": "2h"}, "is not before until"),
        ({"since": "9999-12-31T23:59:59-14:00"}, "is outside the calendar"),
    ],
)
async def test_a_bad_window_is_a_400_problem(api: Api, window: dict[str, str], detail: str) -> None:
    async with api.client() as client:
        answers = [await client.get(path, params=p | window) for path, p in ROUTES.values()]

    for answer in answers:
        assert answer.status_code == 400, answer.text
        assert detail in answer.json()["detail"]


async def test_an_endpoint_says_when_a_planner_last_looked(api: Api) -> None:
    now = api.clock.now()
    await two_of_each(api.store, now)

    async with api.client() as client:
        shown = (await client.get(f"/endpoints/{REF}")).json()

    assert shown["last_analysed_at"] == (now - timedelta(hours=1)).isoformat()
    # Its runs are queued, not answered: no change rate yet (`domain.planning.change_rate`).
    assert shown["changes"] == (
        "not estimated (fewer than two answers that can be compared: no body kept, or "
        "every field volatile or ignored)"
    )
