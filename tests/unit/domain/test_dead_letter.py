"""Sizing records against a target topic's limit, and what a dead letter says about its source."""

from __future__ import annotations

from replicator.domain.dead_letter import (
    BATCH_OVERHEAD,
    HEADER_PREFIX,
    RefusedRecord,
    dead_letter_headers,
    dead_letter_topic_name,
    may_not_fit,
    record_size,
)


def test_record_size_counts_key_value_and_headers() -> None:
    assert record_size(None, None, None) == BATCH_OVERHEAD
    bare = record_size(b"key", b"v" * 100, None)
    assert bare == BATCH_OVERHEAD + 103
    assert record_size(b"key", b"v" * 100, [("h", b"12"), ("n", None)]) > bare + 4


def test_only_large_values_need_the_exact_size() -> None:
    assert not may_not_fit(500, 1000)
    assert may_not_fit(501, 1000)


def test_topic_name_default_and_configured() -> None:
    assert dead_letter_topic_name("eu-to-us") == "mirrorflow-dead-letter.eu-to-us.internal"
    assert dead_letter_topic_name("eu-to-us", "my.dlq") == "my.dlq"


def test_headers_keep_the_records_own_first_then_name_the_source() -> None:
    refused = RefusedRecord("primary", "orders", 3, 41, None, 9000, "too large")
    headers = dead_letter_headers(refused, [("trace", b"abc"), ("n", None)], value_kept=False)
    assert headers[:2] == [("trace", b"abc"), ("n", None)]
    ours = dict(headers[2:])
    assert ours[HEADER_PREFIX + "topic"] == b"orders"
    assert ours[HEADER_PREFIX + "partition"] == b"3" and ours[HEADER_PREFIX + "offset"] == b"41"
    assert ours[HEADER_PREFIX + "timestamp"] == b"" and ours[HEADER_PREFIX + "value"] == b"omitted"
    assert ours[HEADER_PREFIX + "source-cluster"] == b"primary"
