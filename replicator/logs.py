"""Structured, quiet-by-default logging: ``level=... logger=... message key=value``."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable

LEVEL_ENV = "MIRRORFLOW_LOG_LEVEL"
# A log line names this many topics or partitions, then counts the rest (all of them at --log-level debug):
# a worker of 2,000 partitions wrote 2,000 lines on start, and lines of 40 KB at each assignment.
LISTED_AT_MOST = 20


def listed(items: Iterable[str], most: int = LISTED_AT_MOST) -> str:
    """``items`` for a log line: comma-separated, ``-`` for none; past ``most`` of them the first ``most`` and
    how many more (``a,b,...,t,... (+1,980 more)``), unless debug logging is on."""
    names = list(items)
    if not names:
        return "-"
    if len(names) <= most or logging.getLogger().isEnabledFor(logging.DEBUG):
        return ",".join(names)
    return f"{','.join(names[:most])},... (+{len(names) - most:,} more)"


class _KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = (
            f"ts={self.formatTime(record, '%Y-%m-%dT%H:%M:%S')} level={record.levelname.lower()} "
            f"logger={record.name} msg={record.getMessage()!r}"
        )
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def setup_logging(level: str = "warning") -> None:
    """Send MirrorFlow's logs to stderr at ``level`` (warning unless asked)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_KeyValueFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("alembic").setLevel(max(logging.WARNING, root.level))  # its INFO is noise to users
    # librdkafka repeats every failed reconnect, and a fatal error at each attempt to join with a worker id
    # still held; the worker reports each link change, wait and fatal error once, in its own words. Its
    # own lines are for --log-level debug.
    quiet = root.level > logging.DEBUG
    logging.getLogger("replicator.librdkafka").setLevel(logging.CRITICAL + 1 if quiet else logging.DEBUG)
