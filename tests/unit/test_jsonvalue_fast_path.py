"""`parse_storable` skips the walk over a decoded body when its text cannot hold anything
`check_storable` refuses: it must refuse exactly what the walk refuses."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from cronpilot.adapters.jsonvalue import _DECODER, check_storable, parse_storable


class Bare(str):
    """A number's JSON text, written as is: lets the strategy reach the decoder with numbers
    Python's floats cannot hold."""


def _bare(digits: int, exponent: int) -> Bare:
    return Bare(f"{'9' * digits}e{exponent}")


_numbers = st.one_of(
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    # Around the overflow to infinity: long mantissas with short exponents, and the reverse.
    st.builds(_bare, st.integers(150, 320), st.integers(0, 99)),
    st.builds(_bare, st.integers(1, 20), st.integers(280, 400)),
)
_texts = st.text(
    alphabet=st.one_of(
        st.sampled_from(["\x00", "\ud800", "\udfff", "\\", "u", "é"]),
        st.characters(codec=None, max_codepoint=0xDFFF),
    )
)
_leaves = st.one_of(st.none(), st.booleans(), _numbers, _texts)
_values = st.recursive(
    _leaves,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(_texts, children, max_size=4)
    ),
    max_leaves=12,
)


def _encode(value: object) -> str:
    """JSON text with characters unescaped (so lone surrogates reach the bytes too)."""
    if isinstance(value, Bare):
        return str(value)
    if isinstance(value, list):
        return "[" + ",".join(_encode(item) for item in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{_encode(key)}:{_encode(item)}" for key, item in value.items())
        return "{" + ",".join(pairs) + "}"
    return json.dumps(value, ensure_ascii=False)


def _refused(call: object) -> bool:
    try:
        call()  # type: ignore[operator]
    except ValueError:
        return True
    return False


@settings(max_examples=1000)
@given(_values, st.booleans())
def test_the_fast_path_refuses_exactly_what_the_full_check_refuses(
    value: object, as_bytes: bool
) -> None:
    text = _encode(value)
    raw: bytes | str = text.encode("utf-8", "surrogatepass") if as_bytes else text

    def full_check() -> None:
        check_storable(_DECODER.decode(text))

    assert _refused(lambda: parse_storable(raw)) == _refused(full_check)
    if not _refused(full_check):
        # orjson's decoding (most bodies) gives what Python's own would, number for number.
        assert _same(parse_storable(raw), _DECODER.decode(text))


def _same(one: object, other: object) -> bool:
    """Equal, and of the same types throughout (an integer is not its float)."""
    if type(one) is not type(other):
        return False
    if isinstance(one, list) and isinstance(other, list):
        return len(one) == len(other) and all(map(_same, one, other))
    if isinstance(one, dict) and isinstance(other, dict):
        return one.keys() == other.keys() and all(_same(one[k], other[k]) for k in one)
    return one == other


def test_escaped_and_overflowing_values_are_refused() -> None:
    for text in ('{"a":"\\u0000"}', '["\\udc00"]', "[1e400]", "[" + "9" * 250 + "e99]"):
        assert _refused(lambda text=text: parse_storable(text)), text
    assert parse_storable('{"price":9.5,"name":"\\u00e9","big":' + "9" * 250 + "}") is not None


def test_integers_past_64_bits_keep_every_digit() -> None:
    for digits in ("18446744073709551616", "-9223372036854775809", "9" * 40):
        assert parse_storable(f"[{digits}]") == [int(digits)]
