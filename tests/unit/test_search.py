"""Hybrid search's pure parts (`domain.search.search`): the query's checks, the words indexed, the
alpha that follows the graph's density, Louvain communities, and the legs blended."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from cronpilot.domain.errors import InvalidQuery
from cronpilot.domain.graph.graph import Edge, EdgeSource, EdgeType
from cronpilot.domain.search.search import (
    MAX_QUERY_CHARS,
    MIN_ALPHA,
    EndpointText,
    Leg,
    SearchIndex,
    adaptive_alpha,
    checked_query,
    communities,
    endpoint_text,
    words,
)

T0 = datetime(2030, 1, 1, tzinfo=UTC)


def edge(a: str, b: str, kind: EdgeType = EdgeType.PROVIDES) -> Edge:
    return Edge(a, b, kind, EdgeSource.INFERRED, 0, T0)


@pytest.mark.parametrize(
    ("query", "why"),
    [
        ("", "empty"),
        ("   \n\t ", "empty"),
        ("a" * 10_000, f"at most {MAX_QUERY_CHARS}"),
        ("где уровень мошенничества", "cyrillic script"),
        ("詐欺率はどこ", "script"),
    ],
)
def test_a_query_that_cannot_be_searched_is_refused_in_one_line(query: str, why: str) -> None:
    with pytest.raises(InvalidQuery, match=why) as refused:
        checked_query(query)
    assert "\n" not in str(refused.value)


def test_a_query_is_kept_with_its_accents_and_spaces_folded() -> None:
    assert checked_query("  café   fraud rate? ") == "café fraud rate?"


def test_identifiers_are_split_into_words_stop_words_dropped_and_plurals_folded() -> None:
    assert words("Which endpoint tells me the fraud_rate of orderItems?") == [
        "fraud",
        "rate",
        "order",
        "item",
    ]


def test_the_indexed_text_names_fields_as_words() -> None:
    text = endpoint_text(
        job="etl",
        job_description="Order pipeline.",
        name="fetch_orders",
        description="Fetch new orders.",
        url_path="/v1/orders/{{ x.id }}",
        outputs=["batch_id", "recordCount"],
        inputs=["since"],
    )
    assert text.ref == "etl/fetch_orders"
    assert text.text == (
        "fetch orders: Fetch new orders. job etl: Order pipeline. path v1 orders. "
        "returns batch id, record count. takes since"
    )
    assert len(text.digest) == 32


def test_alpha_is_text_only_without_links_and_half_in_a_dense_graph() -> None:
    assert adaptive_alpha(0.0) == 1.0
    assert adaptive_alpha(2.0) == pytest.approx(0.75)
    assert adaptive_alpha(100.0) == MIN_ALPHA


def test_louvain_communities_are_the_same_every_time_and_leave_jobs_out() -> None:
    edges = [
        edge("a/1", "a/2"),
        edge("a/2", "a/3"),
        edge("a/1", "a/3"),
        edge("b/1", "b/2"),
        edge("b/2", "b/3"),
        edge("b/1", "b/3"),
        edge("a/3", "b/1", EdgeType.SEQUENCE),
        edge("a", "a/1", EdgeType.CONTAINS),
    ]
    found = communities(edges, ["a/1", "a/2", "a/3", "b/1", "b/2", "b/3", "c/lonely"])
    assert found == [["a/1", "a/2", "a/3"], ["b/1", "b/2", "b/3"], ["c/lonely"]]
    assert communities(list(reversed(edges)), ["c/lonely"]) == found


def _texts() -> list[EndpointText]:
    def one(ref: str, text: str) -> EndpointText:
        return EndpointText(ref, ref.split("/", maxsplit=1)[0], text)

    return [
        one("shop/fraud_score", "fraud score: the share of orders flagged as fraud"),
        one("shop/investigator", "investigator: look into suspicious orders"),
        one("etl/fetch", "fetch: new orders since the last batch"),
        one("etl/load", "load: write the batch into the warehouse"),
    ]


def test_without_vectors_search_falls_back_to_lexical_and_graph_and_says_so() -> None:
    index = SearchIndex(_texts(), [])
    result = index.search("fraud", [1.0, 0.0], limit=2)
    assert [hit.ref for hit in result.hits] == ["shop/fraud_score"]
    assert Leg.SEMANTIC not in result.legs
    assert result.notes == ["no embedding model reachable: ranked by lexical and graph scores only"]
    assert result.weights.semantic == 0.0


def test_the_semantic_leg_finds_what_shares_no_word_and_every_part_is_explained() -> None:
    vectors = {
        "shop/fraud_score": [1.0, 0.0, 0.0],
        "shop/investigator": [0.7, 0.7, 0.0],
        "etl/fetch": [0.0, 1.0, 0.0],
        "etl/load": [0.0, 0.0, 1.0],
    }
    index = SearchIndex(_texts(), [], vectors)
    result = index.search("data warehouse ingestion", [0.0, 0.1, 1.0], limit=4)
    assert result.hits[0].ref == "etl/load"
    assert result.weights.alpha == 1.0
    for hit in result.hits:
        assert 0 <= hit.semantic <= 1 and 0 <= hit.lexical <= 1 and hit.graph == 0
        expected = result.weights.semantic * hit.semantic + result.weights.lexical * hit.lexical
        assert hit.score == pytest.approx(expected, abs=1e-3)


def test_a_job_filter_keeps_to_the_job() -> None:
    result = SearchIndex(_texts(), []).search("orders", None, job="etl")
    assert {hit.ref for hit in result.hits} == {"etl/fetch"}


def test_the_graph_leg_lifts_the_neighbour_of_a_good_match_and_lowers_alpha() -> None:
    edges = [edge("etl/fetch", "etl/load"), edge("shop/fraud_score", "shop/investigator")]
    plain = SearchIndex(_texts(), []).search("new orders batch", None, limit=4)
    linked = SearchIndex(_texts(), edges).search("new orders batch", None, limit=4)
    assert linked.weights.alpha < 1.0 == plain.weights.alpha
    load = {hit.ref: hit for hit in linked.hits}["etl/load"]
    assert load.graph > 0
    assert load.community == {hit.ref: hit for hit in linked.hits}["etl/fetch"].community


def test_context_endpoints_pull_their_neighbours_up() -> None:
    edges = [edge("etl/fetch", "etl/load"), edge("shop/fraud_score", "shop/investigator")]
    index = SearchIndex(_texts(), edges)
    alone = index.search("warehouse batch", None, limit=4)
    near = index.search("warehouse batch", None, limit=4, context=["shop/fraud_score"])
    before = {hit.ref: hit.graph for hit in alone.hits}
    after = {hit.ref: hit.graph for hit in near.hits}
    assert [hit.ref for hit in near.hits][:2] == ["etl/load", "etl/fetch"]
    assert after["shop/investigator"] > before["shop/investigator"]


def _word_vectors(index: SearchIndex) -> dict[str, list[float]]:
    """Toy word vectors: `warehouse` on one axis, every other indexed word on another."""
    return {w: [1.0, 0.0, 0.0] if w == "warehouse" else [0.0, 1.0, 0.0] for w in index.vocabulary}


def test_a_query_word_the_index_lacks_matches_the_index_words_closest_in_meaning() -> None:
    index = SearchIndex(_texts(), [])
    assert index.unknown_words("depots of orders, depots") == ["depot"]
    assert index.search("depots", None, limit=4, legs=frozenset({Leg.LEXICAL})).hits == []
    index.use_word_vectors(_word_vectors(index))
    near = {"depot": [0.9, 0.0, 0.3]}
    result = index.search("depots", None, limit=4, legs=frozenset({Leg.LEXICAL}), word_vectors=near)
    assert [hit.ref for hit in result.hits] == ["etl/load"]
    assert result.related == {"depot": [("warehouse", 0.949)]}


def test_a_word_too_far_in_meaning_or_one_the_query_has_itself_adds_nothing() -> None:
    index = SearchIndex(_texts(), [])
    index.use_word_vectors(_word_vectors(index))
    lexical = frozenset({Leg.LEXICAL})
    far = index.search("depots", None, legs=lexical, word_vectors={"depot": [0.2, 0, 1]})
    assert far.hits == [] and far.related == {}
    alone = index.search("warehouse", None, legs=lexical)
    both = index.search("warehouse depots", None, legs=lexical, word_vectors={"depot": [1, 0, 0]})
    assert both.related == {"depot": [("warehouse", 1.0)]}
    assert [(h.ref, h.score) for h in both.hits] == [(h.ref, h.score) for h in alone.hits]
