"""`cronpilot search QUERY`: endpoints ranked by how well they answer a question or an intent
(semantic, lexical and graph legs blended; decision 0033)."""

from __future__ import annotations

from typing import Annotated

import typer

from cronpilot.adapters.cli.output import (
    OutputOption,
    add_row,
    new_table,
    note,
    print_data,
    print_table,
)
from cronpilot.adapters.cli.runtime import admin_settings, with_store
from cronpilot.domain.search.search import DEFAULT_LIMIT, MAX_LIMIT


def search(
    query: Annotated[str, typer.Argument(help="What the endpoint should do or tell, in words.")],
    job: Annotated[str | None, typer.Option("--job", help="Only this job's endpoints.")] = None,
    limit: Annotated[
        int, typer.Option("--limit", min=1, max=MAX_LIMIT, help="How many endpoints.")
    ] = DEFAULT_LIMIT,
    output: OutputOption = None,
) -> None:
    """Endpoints best first, each score with its semantic, lexical and graph parts."""
    from cronpilot.adapters.bootstrap import build_clock, build_embedder
    from cronpilot.adapters.search.views import hits_view, weights_view
    from cronpilot.domain.search.search import checked_query
    from cronpilot.usecases.search import search_endpoints

    checked_query(query)
    settings = admin_settings()
    embedder = build_embedder(settings)
    result = with_store(
        settings,
        lambda store: search_endpoints(
            store.reading,
            embedder,
            query,
            uow=store.unit_of_work,
            now=build_clock().now(),
            job=job,
            limit=limit,
        ),
    )
    for remark in result.notes:
        note(remark)
    if output:
        print_data(output, hits_view(result))
        return
    if not result.hits:
        note("no endpoint matches; try other words, or list them with: cronpilot endpoints list")
        return
    weights = weights_view(result)
    note(
        f"score = alpha x ({weights['semantic'] / weights['alpha']:.2f} semantic + "
        f"{weights['lexical'] / weights['alpha']:.2f} lexical) + (1 - alpha) x graph; alpha "
        f"follows each endpoint's links (graph density {weights['density']})"
    )
    for word, near in result.related.items():
        matched = ", ".join(f"{other} {similarity:.2f}" for other, similarity in near)
        note(f"{word!r} is not indexed: the lexical leg matched {matched} (similarity)")
    table = new_table(
        "#", "Endpoint", "Score", "Semantic", "Lexical", "Graph", "Alpha", "Community"
    )
    for rank, hit in enumerate(result.hits, 1):
        add_row(
            table,
            str(rank),
            hit.ref,
            f"{hit.score:.3f}",
            f"{hit.semantic:.2f}",
            f"{hit.lexical:.2f}",
            f"{hit.graph:.2f}",
            f"{hit.alpha:.2f}",
            "-" if hit.community is None else str(hit.community),
        )
    print_table(table)
