"""Why the target refused records, as one line naming the record and what to change."""

from __future__ import annotations

from confluent_kafka import KafkaError

from replicator.domain.dead_letter import record_size


def describe_refusal(where: str, first: int | None, error: KafkaError, sizes: dict[int, int],
                     limit: int | None) -> str:
    """``where``: ``topic[partition]``; ``first``: the first source offset refused; ``sizes``:
    source offset -> bytes of records refused as too large; ``limit``: the target topic's
    ``max.message.bytes`` when known."""
    if error.code() == KafkaError.MSG_SIZE_TOO_LARGE and sizes:
        offset, size = max(sizes.items(), key=lambda item: item[1])
        if limit is not None and record_size(None, b"", None) + size < limit // 2:
            return (f"a batch of {where} from source offset {first} is larger than the target topic accepts "
                    f"(max.message.bytes={limit}) although its records are small: set the route's "
                    f"producer batch.size below {limit}; nothing from offset {first} on was committed")
        return (f"the record of {where} at source offset {offset} ({size} bytes) is larger than the "
                f"target accepts (MSG_SIZE_TOO_LARGE); nothing from offset {first} on was committed")
    return f"target refused the record of {where} at source offset {first}: {error.name()}: {error.str()}"
