"""The librdkafka settings that carry MirrorFlow's guarantees, and the check that a config does not try
to change them (pure: names and values only).

The worker sets these after a route's overrides; an override that disagrees would be
silently ignored, so the config refuses it instead, naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping

# The consumer of a route's source.
CONSUMER_FIXED = {
    "enable.auto.offset.store": "false",  # an offset is stored only once the target acked it
    "enable.auto.commit": "false",  # ... and the worker commits what was stored (domain.commit_pace)
    "auto.offset.reset": "error",  # never jump silently: a missing position is decided by us
    "group.protocol": "consumer",  # KIP-848: incremental, broker-driven assignment
    "isolation.level": "read_committed",
    "enable.partition.eof": "false",
}
# The producer to a route's target.
PRODUCER_FIXED = {
    "acks": "all",
    "enable.idempotence": "true",  # ordered, no duplicates from retries, per partition
    "message.timeout.ms": "0",  # retry forever: a target outage pauses the route, loses nothing
}
# Keys the worker owns outright: the route's group, and the static identity `--worker-id` gives.
OWNED = {
    "group.id": "every worker of a route joins the group mirrorflow-<route>",
    "group.instance.id": "a static identity is given per worker with `mirrorflow run --worker-id`",
    "transactional.id": "an exactly-once route's workers each get one, mirrorflow-<route>-<worker id>",
}

# Keys nothing of MirrorFlow's reads: set, they would be silently ignored (and cost something).
UNUSED = {
    "statistics.interval.ms": "MirrorFlow reads no librdkafka statistics (lag and rates are on its /metrics "
                              "endpoint); set, librdkafka would only spend CPU on statistics nobody reads",
}


# What to set instead of a fixed key, where MirrorFlow has a setting for the wish behind it.
INSTEAD = {
    "auto.offset.reset": "where a route starts without committed offsets is its `start:` (earliest, latest or a "
                         "time)",
    "enable.auto.commit": "the worker commits an offset only once the target acknowledged the record",
    "enable.auto.offset.store": "the worker commits an offset only once the target acknowledged the record",
    "isolation.level": "aborted source transactions are never copied",
    "acks": "for records, positions and syncs committed together set the route's `guarantee: exactly-once`",
    "enable.idempotence": "for records, positions and syncs committed together set the route's "
                          "`guarantee: exactly-once`",
    "message.timeout.ms": "a target that does not answer pauses the route, which loses nothing; the SLA "
                          "runbook alerts on the lag",
    "group.protocol": "the workers of a route share its partitions with KIP-848's broker-driven assignment",
}


def refused_overrides(properties: Mapping[str, str], *fixed: Mapping[str, str]) -> list[tuple[str, str]]:
    """(key, why) for each key of ``properties`` the worker would overwrite."""
    problems = []
    for key, value in properties.items():
        if key in OWNED:
            problems.append((key, f"set by MirrorFlow ({OWNED[key]}); remove it"))
            continue
        if key in UNUSED:
            problems.append((key, f"not used: {UNUSED[key]}; remove it"))
            continue
        for table in fixed:
            if key in table and value.strip().lower() != table[key]:
                why = f"MirrorFlow sets {key}={table[key]} (replication without loss depends on it); remove it"
                if key in INSTEAD:
                    why += f" ({INSTEAD[key]})"
                problems.append((key, why))
    return problems
