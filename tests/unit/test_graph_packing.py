"""The all-jobs graph's tiles packed in rows: never overlapping, every tile placed once, and
no worse for a wide screen than one row or one column of them."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cronpilot.adapters.console.graph_page import ASPECT, BAND_GAP, RUN, Tile, pack

tile = st.builds(
    lambda n, w, h: Tile(f"job-{n}", w, h, []),
    st.integers(0, 10_000),
    st.integers(100, 900),
    st.integers(100, 700),
)
tiles = st.lists(tile, max_size=30, unique_by=lambda t: t.name)
a_row_of_tiles = st.lists(tile, min_size=1, max_size=RUN, unique_by=lambda t: t.name)
"""No more than a row of them: one row is among the layouts tried."""


def _scale(placed: list[tuple[Tile, float, float]]) -> float:
    """The model size the box must show: what a fit's zoom divides the box by."""
    width = max(x + t.width for t, x, _ in placed)
    height = max(y + t.height for t, _, y in placed)
    return max(width, height * ASPECT)


@given(tiles)
def test_packed_tiles_never_overlap_and_each_is_placed_once(given_tiles: list[Tile]) -> None:
    placed = pack(given_tiles)
    assert sorted(t.name for t, _, _ in placed) == sorted(t.name for t in given_tiles)
    for i, (a, ax, ay) in enumerate(placed):
        for b, bx, by in placed[i + 1 :]:
            apart = (
                ax + a.width <= bx
                or bx + b.width <= ax
                or ay + a.height <= by
                or by + b.height <= ay
            )
            assert apart, (a, b)


@given(a_row_of_tiles)
def test_packing_does_no_worse_than_one_row_or_one_column(given_tiles: list[Tile]) -> None:
    row = sum(t.width + BAND_GAP for t in given_tiles) - BAND_GAP
    column = sum(t.height + BAND_GAP for t in given_tiles) - BAND_GAP
    one_row = max(row, max(t.height for t in given_tiles) * ASPECT)
    one_column = max(*(t.width for t in given_tiles), column * ASPECT)
    assert _scale(pack(given_tiles)) <= min(one_row, one_column) + 1e-6


def test_the_demo_s_five_jobs_pack_into_two_rows() -> None:
    demo = [
        Tile("health", 212, 348, []),
        Tile("flash-sale", 212, 164, []),
        Tile("queue", 212, 164, []),
        Tile("billing", 352, 118, []),
        Tile("etl", 492, 118, []),
    ]
    rows = {y for _, _, y in pack(demo)}
    assert len(rows) == 2
