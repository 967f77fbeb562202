"""Which source topics a route replicates: include and exclude patterns.

Patterns are regular expressions matched against the *whole* topic name (as the
broker's RE2/J regex subscriptions and MirrorMaker 2's filters do): ``orders``
matches only ``orders``, ``payments\\..*`` matches ``payments.eu``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

# Kafka's own internal topics (``__consumer_offsets``, ``__transaction_state``) and
# the internal topics of MirrorFlow and MirrorMaker 2 (``*.internal``): never
# copied unless the route sets ``include_internal``.
INTERNAL_TOPICS: tuple[str, ...] = (r"__.*", r".*[-.]internal")


def compile_pattern(pattern: str) -> re.Pattern[str]:
    """Compile ``pattern`` for whole-name matching; raises ``re.error`` when invalid."""
    return re.compile(pattern)


@dataclass(frozen=True, slots=True)
class TopicFilter:
    """Include/exclude patterns of one route, evaluated on whole topic names."""

    include: tuple[str, ...]
    exclude: tuple[str, ...] = ()
    include_internal: bool = False
    _include: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _exclude: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_include", tuple(compile_pattern(p) for p in self.include))
        excludes = self.exclude if self.include_internal else self.exclude + INTERNAL_TOPICS
        object.__setattr__(self, "_exclude", tuple(compile_pattern(p) for p in excludes))

    def should_replicate_topic(self, topic: str) -> bool:
        """True when ``topic`` matches an include pattern and no exclude pattern."""
        if any(p.fullmatch(topic) for p in self._exclude):
            return False
        return any(p.fullmatch(topic) for p in self._include)

    def select(self, topics: Iterable[str]) -> list[str]:
        """The topics of ``topics`` this filter replicates, sorted."""
        return sorted(t for t in topics if self.should_replicate_topic(t))
