"""The provenance header's value: origin, then each cluster the record left since."""

from __future__ import annotations

import pytest

from shared.errors import CodecError
from shared.records.provenance import Provenance


def test_a_provenance_value_round_trips_and_names_every_cluster_it_passed() -> None:
    first = Provenance("A", "orders.v1", 3, 1234)
    assert first.encode() == b"A:orders.v1:3:1234"
    hopped = first.leaving("B").leaving("C").leaving("B")
    assert hopped.encode() == b"A:orders.v1:3:1234>B>C"
    assert Provenance.decode(hopped.encode()) == hopped
    assert [hopped.visited(alias) for alias in ("A", "B", "C", "D")] == [True, True, True, False]


@pytest.mark.parametrize("value", [b"A:orders:0", b"A:orders:x:1", b"\xff\xfe", b""])
def test_a_malformed_value_is_a_codec_error(value: bytes) -> None:
    with pytest.raises(CodecError, match=r"not a strait\.provenance header value"):
        Provenance.decode(value)
