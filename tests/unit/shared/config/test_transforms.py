"""Connect's `transforms`/`predicates` keys in an MM2 file: read as Connect reads them, or refused naming the key."""

from __future__ import annotations

import pytest

from shared.config import parse_mm2_config
from shared.config.transforms import PredicateSpec, TransformSpec
from shared.errors import ConfigError

BASE = {"clusters": "A, B", "A.bootstrap.servers": "a:9092", "B.bootstrap.servers": "b:9092", "A->B.enabled": "true"}
CONNECT = "org.apache.kafka.connect.transforms."


def chain(props: dict[str, str]) -> tuple[TransformSpec, ...]:
    return parse_mm2_config({**BASE, **props}, env={}).flow_named("A->B").transforms


def error_of(props: dict[str, str]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        parse_mm2_config({**BASE, **props}, env={})
    return info.value


def test_each_supported_transform_and_predicate_is_read_with_its_keys() -> None:
    transforms = chain(
        {
            "transforms": "dropTombstones, tag, strip, keepOrders, mask",
            "transforms.dropTombstones.type": CONNECT + "Filter",
            "transforms.dropTombstones.predicate": "tombstone",
            "transforms.tag.type": CONNECT + "InsertHeader",
            "transforms.tag.header": "mirrored-by",
            "transforms.tag.value.literal": "strait",
            "transforms.strip.type": CONNECT + "DropHeaders",
            "transforms.strip.headers": "secret, internal",
            "transforms.strip.predicate": "hasSecret",
            "transforms.keepOrders.type": CONNECT + "Filter",
            "transforms.keepOrders.predicate": "orders",
            "transforms.keepOrders.negate": "true",
            "transforms.mask.type": "strait.transforms.Python",
            "transforms.mask.function": "my_masks:mask_email",
            "predicates": "tombstone, hasSecret, orders",
            "predicates.tombstone.type": CONNECT + "predicates.RecordIsTombstone",
            "predicates.hasSecret.type": CONNECT + "predicates.HasHeaderKey",
            "predicates.hasSecret.name": "secret",
            "predicates.orders.type": CONNECT + "predicates.TopicNameMatches",
            "predicates.orders.pattern": r"A\.orders-\p{Lower}+",
        }
    )
    tombstone = PredicateSpec("tombstone", "is_tombstone")
    assert transforms == (
        TransformSpec("dropTombstones", "filter", tombstone),
        TransformSpec("tag", "insert_header", header="mirrored-by", value=b"strait"),
        TransformSpec(
            "strip",
            "drop_headers",
            PredicateSpec("hasSecret", "has_header_key", "secret"),
            headers=("secret", "internal"),
        ),
        TransformSpec(
            "keepOrders", "filter", PredicateSpec("orders", "topic_matches", r"A\.orders-[a-z]+"), negate=True
        ),
        TransformSpec("mask", "python", function="my_masks:mask_email", function_key="transforms.mask.function"),
    )


def test_a_python_transform_set_on_a_flow_is_named_by_its_flow_key() -> None:
    """A function that cannot be imported at start is then reported under the key the file has."""
    (mask,) = chain(
        {
            "A->B.transforms": "mask",
            "A->B.transforms.mask.type": "strait.transforms.Python",
            "A->B.transforms.mask.function": "my_masks:mask_email",
        }
    )
    assert mask.function_key == "A->B.transforms.mask.function"


def test_flow_keys_override_top_level_keys_one_by_one_as_mm2_does() -> None:
    transforms = chain(
        {
            "transforms": "tag",
            "transforms.tag.type": CONNECT + "InsertHeader",
            "transforms.tag.header": "origin",
            "transforms.tag.value.literal": "global",
            "A->B.transforms.tag.value.literal": "A",
        }
    )
    assert transforms == (TransformSpec("tag", "insert_header", header="origin", value=b"A"),)
    assert chain({"transforms": "tag", "transforms.tag.type": CONNECT + "Filter", "A->B.transforms": ""}) == ()


@pytest.mark.parametrize(
    ("props", "key", "says"),
    [
        (
            {"A->B.transforms": "x", "A->B.transforms.x.type": CONNECT + "InsertField$Value"},
            "A->B.transforms.x.type",
            "Strait does not implement this transform",
        ),
        (
            {"transforms": "x", "transforms.x.type": "com.example.SchemaIdRewriter"},
            "transforms.x.type",
            "Strait does not implement this transform",
        ),
        ({"transforms": "r", "transforms.r.type": CONNECT + "RegexRouter"}, "transforms.r.type", "replication.policy"),
        ({"transforms": "t", "transforms.t.type": CONNECT + "TimestampRouter"}, "transforms.t.type", "renames"),
        ({"transforms": "x"}, "transforms.x.type", "missing: the class of transform 'x'"),
        ({"transforms": "x, x", "transforms.x.type": CONNECT + "Filter"}, "transforms", "names 'x' twice"),
        (
            {"transforms": "x", "transforms.x.type": CONNECT + "Filter", "transforms.x.predicate": "p"},
            "transforms.x.predicate",
            "no predicate 'p'",
        ),
        (
            {"transforms": "x", "transforms.x.type": CONNECT + "Filter", "transforms.x.negate": "true"},
            "transforms.x.negate",
            "negates nothing",
        ),
        (
            {"transforms": "x", "transforms.x.type": CONNECT + "Filter", "transforms.x.negate": "yes"},
            "transforms.x.negate",
            "true or false",
        ),
        ({"predicates": "p", "predicates.p.type": CONNECT + "predicates.HasHeaderKey"}, "predicates.p.name", "missing"),
        (
            {
                "predicates": "p",
                "predicates.p.type": CONNECT + "predicates.TopicNameMatches",
                "predicates.p.pattern": "(a",
            },
            "predicates.p.pattern",
            "not a valid regular expression",
        ),
        ({"predicates": "p", "predicates.p.type": "com.example.IsVip"}, "predicates.p.type", "does not implement"),
        (
            {"transforms": "h", "transforms.h.type": CONNECT + "InsertHeader", "transforms.h.header": "x"},
            "transforms.h.value.literal",
            "missing",
        ),
        ({"transforms": "d", "transforms.d.type": CONNECT + "DropHeaders"}, "transforms.d.headers", "missing"),
        (
            {"transforms": "m", "transforms.m.type": "strait.transforms.Python", "transforms.m.function": "masks"},
            "transforms.m.function",
            "module:function",
        ),
    ],
)
def test_what_strait_cannot_apply_exactly_is_refused_naming_the_key(props: dict[str, str], key: str, says: str) -> None:
    error = error_of(props)
    assert error.key == key
    assert says in str(error)


def test_a_flow_that_is_not_enabled_keeps_its_transform_keys_unread() -> None:
    config = parse_mm2_config(
        {**BASE, "B->A.transforms": "x", "B->A.transforms.x.type": "com.example.Anything"}, env={}
    )
    assert config.flow_named("B->A").transforms == ()
