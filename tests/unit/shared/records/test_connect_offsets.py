"""MM2's Connect offsets records, byte for byte as MirrorMaker 2 writes them."""

from __future__ import annotations

import pytest

from shared.errors import CodecError
from shared.records.connect_offsets import (
    SOURCE_CONNECTOR,
    SourcePartitionKey,
    decode_last_copied,
    encode_last_copied,
)

MM2_KEY = b'["MirrorSourceConnector",{"cluster":"A","partition":3,"topic":"orders"}]'


def test_a_key_encodes_to_the_bytes_connect_writes_and_back() -> None:
    key = SourcePartitionKey(SOURCE_CONNECTOR, "A", "orders", 3)
    assert key.encode() == MM2_KEY
    assert SourcePartitionKey.decode(MM2_KEY) == key


def test_the_value_is_the_last_copied_offset() -> None:
    assert encode_last_copied(41) == b'{"offset":41}'
    assert decode_last_copied(b'{"offset":41}') == 41
    assert decode_last_copied(b'{"offset": -1}') == -1


@pytest.mark.parametrize(
    "raw",
    [
        b"not json",
        b'["MirrorCheckpointConnector",{"group":"g","topic":"t","partition":0}]',
        b'["MirrorHeartbeatConnector",{"sourceClusterAlias":"A","targetClusterAlias":"B"}]',
        b'["MirrorSourceConnector",{"cluster":"A","partition":"3","topic":"orders"}]',
        b'["MirrorSourceConnector",{"cluster":"A","partition":-1,"topic":"orders"}]',
    ],
)
def test_keys_of_other_connectors_or_bad_shapes_do_not_decode(raw: bytes) -> None:
    with pytest.raises(CodecError):
        SourcePartitionKey.decode(raw)


@pytest.mark.parametrize("raw", [b"{}", b'{"offset":"4"}', b'{"offset":true}', b'{"offset":-2}', b"[]"])
def test_bad_values_do_not_decode(raw: bytes) -> None:
    with pytest.raises(CodecError):
        decode_last_copied(raw)
