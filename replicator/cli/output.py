"""Plain-text tables and JSON for command output."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Sequence
from typing import Any

_lock = threading.Lock()


def say(line: str) -> None:
    """Print one progress line (safe from several threads)."""
    with _lock:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Rows aligned under their headers, one line each."""
    cells = [[str(h) for h in headers]] + [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=False)).rstrip() for row in cells]
    return "\n".join(lines)


def as_json(value: Any) -> str:
    """Stable, indented JSON."""
    return json.dumps(value, indent=2, sort_keys=True, default=str)
