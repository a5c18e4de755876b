"""A flow with a Filter under a predicate, DropHeaders under a predicate and InsertHeader, and source records that
exercise each: what the verify and audit tests copy with data-mirror and check against the chain."""

from __future__ import annotations

Written = tuple[bytes, bytes | None, list[tuple[str, str | bytes]]]  # key, value, headers

CONNECT = "org.apache.kafka.connect.transforms."
# Tombstones dropped (Filter under RecordIsTombstone), `secret` stripped where a record has it (DropHeaders under
# HasHeaderKey), `origin` added to every record kept (InsertHeader).
CHAIN = {
    "transforms": "dropTombstones,strip,tag",
    "transforms.dropTombstones.type": CONNECT + "Filter",
    "transforms.dropTombstones.predicate": "isTombstone",
    "transforms.strip.type": CONNECT + "DropHeaders",
    "transforms.strip.headers": "secret",
    "transforms.strip.predicate": "hasSecret",
    "transforms.tag.type": CONNECT + "InsertHeader",
    "transforms.tag.header": "origin",
    "transforms.tag.value.literal": "eu-west",
    "predicates": "isTombstone,hasSecret",
    "predicates.isTombstone.type": CONNECT + "predicates.RecordIsTombstone",
    "predicates.hasSecret.type": CONNECT + "predicates.HasHeaderKey",
    "predicates.hasSecret.name": "secret",
}


def dropped_by_chain(offset: int) -> bool:
    """The records `transformed_source` writes as tombstones."""
    return offset % 9 == 4


def transformed_source(partition: int, offsets: range) -> list[Written]:
    """Record i of `partition`: a tombstone where `dropped_by_chain`, a `secret` header every fifth."""
    return [
        (
            f"k{partition}-{i}".encode(),
            None if dropped_by_chain(i) else f"v{partition}-{i}".encode(),
            [("h", b"v"), ("secret", b"s")] if i % 5 == 0 else [("h", b"v")],
        )
        for i in offsets
    ]
