"""Sets of offsets written as inclusive ranges: ``5-9,12`` (exact, and short when contiguous)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, order=True)
class OffsetRange:
    """Offsets ``first`` to ``last``, both included."""

    first: int
    last: int

    def __post_init__(self) -> None:
        if self.last < self.first:
            raise ValueError(f"offset range {self.first}-{self.last}: last is before first")

    @property
    def size(self) -> int:
        """How many offsets the range holds."""
        return self.last - self.first + 1

    def __str__(self) -> str:
        return str(self.first) if self.first == self.last else f"{self.first}-{self.last}"


def to_ranges(offsets: Iterable[int]) -> tuple[OffsetRange, ...]:
    """The fewest ranges covering exactly ``offsets`` (any order, repeats ignored)."""
    ranges: list[OffsetRange] = []
    for offset in sorted(set(offsets)):
        if ranges and ranges[-1].last == offset - 1:
            ranges[-1] = OffsetRange(ranges[-1].first, offset)
        else:
            ranges.append(OffsetRange(offset, offset))
    return tuple(ranges)


def format_ranges(ranges: Sequence[OffsetRange], limit: int | None = None) -> str:
    """``5-9,12``; with ``limit``, only the first ``limit`` ranges and ``,...`` after them."""
    shown = ranges if limit is None else ranges[:limit]
    text = ",".join(str(r) for r in shown)
    return text + ",..." if len(shown) < len(ranges) else text


def parse_ranges(text: str | None) -> tuple[OffsetRange, ...]:
    """Read what :func:`format_ranges` wrote (a trailing ``...`` is dropped); ValueError otherwise."""
    ranges = []
    for part in (text or "").split(","):
        part = part.strip()
        if not part or part == "...":
            continue
        first, _, last = part.partition("-")
        try:
            ranges.append(OffsetRange(int(first), int(last or first)))
        except ValueError:
            raise ValueError(f"not an offset range: {part!r}") from None
    return tuple(ranges)
