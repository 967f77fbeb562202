"""Whole-name include/exclude matching, with internal topics kept out."""

from __future__ import annotations

import pytest

from replicator.domain.topic_filter import TopicFilter

CASES = [
    # include, exclude, include_internal, topic, replicated?
    (("orders",), (), False, "orders", True),
    (("orders",), (), False, "orders2", False),  # whole-name match, like the broker's RE2/J
    (("orders",), (), False, "my-orders", False),
    ((r"payments\..*",), (), False, "payments.eu", True),
    ((r"payments\..*",), (), False, "paymentsXeu", False),
    ((".*",), (), False, "__consumer_offsets", False),  # Kafka's internals never, by default
    ((".*",), (), False, "mm2-offset-syncs.b.internal", False),
    ((".*",), (), False, "mirrorflow-offset-syncs.internal", False),
    ((".*",), (), True, "__consumer_offsets", True),
    ((".*",), (r".*\.tmp",), False, "scratch.tmp", False),
    ((".*",), (r".*\.tmp",), False, "scratch.tmpl", True),
]


@pytest.mark.parametrize(("include", "exclude", "internal", "topic", "expected"), CASES)
def test_should_replicate_topic(
    include: tuple[str, ...], exclude: tuple[str, ...], internal: bool, topic: str, expected: bool
) -> None:
    assert TopicFilter(include, exclude, internal).should_replicate_topic(topic) is expected


def test_select_sorts_and_filters() -> None:
    topic_filter = TopicFilter(("b", "a", r"c\..*"))
    assert topic_filter.select(["c.1", "b", "zz", "a", "__x"]) == ["a", "b", "c.1"]


def test_filters_are_hashable_values() -> None:
    assert TopicFilter(("a",)) == TopicFilter(("a",))
    assert len({TopicFilter(("a",)), TopicFilter(("a",))}) == 1
