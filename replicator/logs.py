"""Structured, quiet-by-default logging: ``level=... logger=... message key=value``."""

from __future__ import annotations

import logging
import sys

LEVEL_ENV = "MIRRORFLOW_LOG_LEVEL"


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
