"""A stored body nested deeper than Python's `json` (and FastAPI's encoder) can recurse is
served whole by the API and shown by the console's run page, on every store."""

from __future__ import annotations

from cronpilot.adapters.jsonvalue import dump_json
from cronpilot.adapters.sql.store import SqlStore
from cronpilot.domain.access.access import Scope
from cronpilot.domain.model import Response
from tests.contract.builders import add_endpoint, run_once
from tests.integration.api.conftest import Api
from tests.support.deep_json import nested, store_body

DEPTH = 900
"""Deeper than FastAPI's encoder and `json.dumps` reach from the server's stack; a stored body
decoded in the test's own (deep) stack cannot go much further."""


async def test_a_deep_body_is_served_and_shown(api: Api) -> None:
    depth = DEPTH
    now = api.clock.now()
    await add_endpoint(api.store, "j", "e", now)
    run = await run_once(api.store, now, Response(status_code=200, body={}))
    assert isinstance(api.store, SqlStore)
    await store_body(api.store, run.id, dump_json(nested(depth)))

    async with api.client(Scope.READ) as client:
        served = await client.get(f"/runs/{run.id}")
    async with api.client(None) as browser:
        await browser.post("/console/login", data={"token": api.secrets[Scope.READ]})
        page = await browser.get(f"/console/runs/{run.id}")

    assert served.status_code == 200, served.text
    text = served.text
    assert text.count('"next":') == depth // 2
    # Rounded as every API answer is (`TidyJSONResponse`), however deep.
    assert '{"leaf":0.3}' in text
    assert text.endswith(',"endpoint":"j/e"}')
    assert page.status_code == 200, page.text[-500:]
    assert page.text.count("&#34;next&#34;: ") == depth // 2
