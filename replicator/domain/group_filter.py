"""Which consumer groups of a route's source get checkpoints: include and exclude patterns.

Patterns are regular expressions on the *whole* group id, like the topic filter's.
The default exclusions are MirrorMaker 2's (``console-consumer-.*``, ``connect-.*``,
``__.*``) plus MirrorFlow's own route groups (``mirrorflow-.*``): their positions
mean nothing to an application on the target.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

DEFAULT_GROUPS: tuple[str, ...] = (".*",)
DEFAULT_EXCLUDED_GROUPS: tuple[str, ...] = ("console-consumer-.*", "connect-.*", "__.*", "mirrorflow-.*")


@dataclass(frozen=True, slots=True)
class GroupFilter:
    """Include/exclude patterns of one route's checkpoints, evaluated on whole group ids."""

    include: tuple[str, ...] = DEFAULT_GROUPS
    exclude: tuple[str, ...] = DEFAULT_EXCLUDED_GROUPS
    _include: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _exclude: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_include", tuple(re.compile(p) for p in self.include))
        object.__setattr__(self, "_exclude", tuple(re.compile(p) for p in self.exclude))

    def should_checkpoint_group(self, group: str) -> bool:
        """True when ``group`` matches an include pattern and no exclude pattern."""
        if any(p.fullmatch(group) for p in self._exclude):
            return False
        return any(p.fullmatch(group) for p in self._include)

    def select(self, groups: Iterable[str]) -> list[str]:
        """The groups of ``groups`` this filter keeps, sorted, each once."""
        return sorted({g for g in groups if self.should_checkpoint_group(g)})


def requested_group_problems(requested: Iterable[str], existing: Iterable[str], group_filter: GroupFilter) -> list[str]:
    """Why each group asked for by name cannot be checkpointed (empty when all can)."""
    known = set(existing)
    problems = []
    for group in dict.fromkeys(requested):
        if group not in known:
            problems.append(f"no consumer group {group!r}")
        elif not group_filter.should_checkpoint_group(group):
            problems.append(f"group {group!r} is excluded by checkpoints.groups/exclude_groups "
                            f"(groups: {list(group_filter.include)}, exclude_groups: {list(group_filter.exclude)})")
    return problems
