"""A topic or group pattern selects the same names in Strait as in MM2: Java's own regex engine (java.util.regex,
run by a small helper) is the anchor for every pattern below, Java-only syntax included, and what Strait cannot
read faithfully is refused with an error naming the construct, never read differently."""

from __future__ import annotations

import re

import pytest

from shared.errors import ConfigError
from shared.filters.java_regex import JavaRegexError, compile_java
from shared.filters.topic import DefaultTopicFilter
from tests.support.java_helper import run_java_helper

PATTERNS = [
    ".*",
    "orders-.*",
    "\\p{Lower}+-events",
    "[\\p{Alnum}_]+",
    "\\P{Digit}+",
    "\\p{Punct}+",
    "(?i)ORDERS.*",
    "orders|(?i)PAY.*|refunds",
    "a(?i)b|c",
    "(a(?i)b|c)d",
    "(?i:x)X",
    "\\Qorders.v1\\E.*",
    "[\\Q.-\\E]+",
    "(?<env>prod|stage)-\\k<env>",
    "ab\\z",
    "[^.]+\\.internal",
    "\\w+",
    "\\d{2,}",
    "(?!__).*",
    ".*(?<!\\.internal)",
    "x{2,}+",
    "(?>ab|a)b",
    "\\x{41}-.*",
    "\\0101-.*",
    "a\\hb",
    "(?d)ab",
    "(?-i)ab",
]
NAMES = [
    "orders",
    "ORDERS-eu",
    "orders-eu",
    "payments",
    "PAYMENTS",
    "refunds",
    "a b",
    "ab",
    "aB",
    "AB",
    "c",
    "C",
    "bd",
    "aBd",
    "Cd",
    "xX",
    "XX",
    "xx",
    "xxx",
    "orders.v1-x",
    "ordersXv1",
    ".-.",
    "prod-prod",
    "prod-stage",
    "__consumer_offsets",
    "mm2-offsets.B.internal",
    "h\u00e9llo",
    "123",
    "12",
    "abc-events",
    "A-1",
    "!!",
    "a\tb",
]
# Java reads these; Python's re has no faithful equivalent, so Strait refuses them (by name) instead of guessing.
REFUSED = ["\\p{L}+", "\\p{IsAlphabetic}+", "[a-z&&[^e]]+", "[a-c[x-z]]+", "(?u)ab", "\\Gab"]


def java_matches(patterns: list[str], names: list[str]) -> tuple[dict[int, set[int]], set[int]]:
    """{pattern index: indexes of the names Java matches in full}, and the patterns Java refuses."""
    lines = [f"P\t{p}" for p in patterns] + [f"N\t{n}" for n in names]
    matched: dict[int, set[int]] = {index: set() for index in range(len(patterns))}
    refused: set[int] = set()
    for line in run_java_helper("RegexMatch", [], timeout_s=120, stdin="\n".join(lines) + "\n").splitlines():
        kind, *numbers = line.split("\t")
        if kind == "M":
            matched[int(numbers[0])].add(int(numbers[1]))
        elif kind == "E":
            refused.add(int(numbers[0]))
    return matched, refused


def test_every_pattern_selects_the_same_names_as_java() -> None:
    expected, refused_by_java = java_matches(PATTERNS, NAMES)
    assert not refused_by_java, [PATTERNS[i] for i in refused_by_java]
    for index, pattern in enumerate(PATTERNS):
        compiled = compile_java(pattern)
        mine = {n for n, name in enumerate(NAMES) if compiled.fullmatch(name)}
        differ = sorted(NAMES[n] for n in mine ^ expected[index])
        assert not differ, f"{pattern!r}: Java and Strait disagree on {differ}"


def test_entries_are_joined_before_reading_as_mm2_joins_them() -> None:
    """MM2 joins `topics` entries with '|' and compiles the whole: an inline flag runs on into later entries."""
    entries = ["orders", "(?i)pay.*", "refunds"]
    expected, _ = java_matches(["|".join(entries)], NAMES)
    selected = DefaultTopicFilter(entries, [])
    assert {n for n, name in enumerate(NAMES) if selected.should_replicate_topic(name)} == expected[0]


@pytest.mark.parametrize("pattern", REFUSED)
def test_what_java_reads_but_python_cannot_is_refused_by_name(pattern: str) -> None:
    _, refused_by_java = java_matches([pattern], NAMES)
    assert not refused_by_java, f"Java accepts {pattern!r}: the refusal is Strait's, and must say why"
    with pytest.raises((JavaRegexError, re.error)) as refusal:
        compile_java(pattern)
    assert str(refusal.value)
    with pytest.raises(ConfigError, match="topics"):
        DefaultTopicFilter([pattern], [])
