"""What the workers' logs say of the partitions a run lost records of, for the run's account.

CI keeps no logs: the one loss its short fault run found (seed 11) could only be reasoned about, and reproduced
by fake clients, not read. A failed run's account now quotes the lines that name such a partition (placed,
revoked, handed over, gone back, copied again), in time order across the workers.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

# A worker's log line: `ts=<ISO time> level=... msg=...`; lines without a time (a banner) are left out.
_TIME = re.compile(r"^ts=(\S+) ")
LIMIT = 60  # lines quoted at most; the rest are counted


def partition_lines(logs: Iterable[Path], partitions: Iterable[tuple[str, int]], limit: int = LIMIT) -> list[str]:
    """The lines of ``logs`` naming one of ``partitions`` (``topic[p]`` in a list, or ``topic=t partition=p``), each
    prefixed with its log's name, oldest first; past ``limit``, the first ones and a count of the rest."""
    wanted = sorted(set(partitions))
    if not wanted:
        return []
    names = [f"{topic}[{partition}]" for topic, partition in wanted]
    pairs = [re.compile(rf"\btopic={re.escape(topic)} partition={partition}\b") for topic, partition in wanted]
    found: list[tuple[str, str]] = []
    for path in sorted(logs):
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            stamp = _TIME.match(line)
            if stamp and (any(name in line for name in names) or any(pair.search(line) for pair in pairs)):
                found.append((stamp.group(1), f"{path.stem}: {line}"))
    found.sort(key=lambda item: item[0])
    lines = [line for _, line in found[:limit]]
    if len(found) > limit:
        lines.append(f"... {len(found) - limit} more lines in the workers' logs")
    return lines
