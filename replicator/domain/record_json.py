"""Keys and values of MirrorFlow's compacted internal topics (offset syncs, checkpoints) as compact UTF-8 JSON.

Decoding checks each field and raises ValueError naming it: ``what`` is the full
name of the field in the message, e.g. ``"offset sync key partition"``.
"""

from __future__ import annotations

import json
from typing import Any


def dump_json(obj: object) -> bytes:
    """``obj`` as compact UTF-8 JSON (no spaces: these bytes are record keys)."""
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


def load_json(data: bytes, what: str) -> Any:
    """The JSON of ``data``; ValueError when it is not UTF-8 JSON."""
    try:
        return json.loads(data.decode("utf-8"))
    except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError alike
        raise ValueError(f"{what} is not UTF-8 JSON: {exc}") from exc


def offset_field(value: object, what: str) -> int:
    """``value`` as an offset (an integer >= 0); ValueError otherwise."""
    # bool is an int to Python, never an offset.
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{what}: expected an integer >= 0, got {value!r}")
    return value


def name_field(value: object, what: str) -> str:
    """``value`` as a name (a non-empty string); ValueError otherwise."""
    if not (isinstance(value, str) and value):
        raise ValueError(f"{what}: expected a non-empty string, got {value!r}")
    return value
