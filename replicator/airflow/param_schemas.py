"""JSON-schema patterns of the DAGs' text params, so the trigger form refuses a bad value before a run starts.

Each mirrors what the runbook's own parser takes (tests keep them in step); the
parser still checks, and names the param, for a run started another way.
"""

from __future__ import annotations

# ISO 8601 as the audit and backfill windows read it (replicator.runbooks.audit.window.parse_time): a day, or a day
# and a time, with or without a zone (none: UTC); or "now".
TIME = r"^\s*([Nn][Oo][Ww]|\d{4}-\d{2}-\d{2}([T ]\d{2}(:\d{2}(:\d{2}(\.\d+)?)?)?)?(Z|z|[+-]\d{2}(:?\d{2})?)?)\s*$"
# An instant with a time of day, as a failover's ``at`` (replicator.domain.failover.parse_instant).
INSTANT = r"^\s*\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|z|[+-]\d{2}:?\d{2})?\s*$"
# A duration: 60, 60s, 5m, 1h (replicator.domain.failover.parse_duration).
DURATION = r"^\s*\d+\s*[smh]?\s*$"
# Offsets per partition: 0=100,1=250 (replicator.runbooks.backfill.plan.parse_offset_ranges).
OFFSETS = r"^\s*\d+\s*=\s*\d+(\s*,\s*\d+\s*=\s*\d+)*\s*$"
