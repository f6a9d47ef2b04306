"""The console's search box and page, and the graph page's Louvain communities."""

from __future__ import annotations

from cronpilot.domain.access.access import Scope
from tests.integration.api.test_console import Console, console  # noqa: F401 (the fixture)


async def test_the_search_page_ranks_endpoints_with_links_and_the_header_has_a_box(
    console: Console,  # noqa: F811
) -> None:
    async with console.signed_in(Scope.READ) as (client, _):
        empty = await client.get("/console/search")
        found = await client.get("/console/search", params={"q": "stock levels"})
        bad = await client.get("/console/search", params={"q": "в наличии"})

    assert empty.status_code == 200
    assert 'action="/console/search" role="search"' in empty.text
    assert found.status_code == 200
    rows = found.text.split("<tbody>", 1)[1]
    assert rows.index('href="/console/endpoints/shop/stock"') < rows.index("shop/prices")
    assert "lexical) + (1 − alpha) × graph" in found.text
    assert bad.status_code == 400
    assert "cyrillic script" in bad.text


async def test_the_graph_page_groups_related_endpoints(console: Console) -> None:  # noqa: F811
    async with console.signed_in(Scope.READ) as (client, _):
        page = await client.get("/console/graph")

    assert page.status_code == 200
    assert '"community": 1' in page.text
    assert 'data-community="1"' in page.text
