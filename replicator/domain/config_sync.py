"""Topic configs, source -> target: which properties are copied, and the diff to apply.

Only topic-level overrides are copied: a source topic that runs on its cluster's
defaults leaves the target on the target's defaults (the clusters may be sized
differently). Properties that must stay the target's business are never copied
nor touched; the defaults are MirrorMaker 2's (``DefaultConfigPropertyFilter``),
and a route adds its own names or regexes (``sync.exclude_configs``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from replicator.domain.sync_plan import AlterTopicConfig, ConfigChange

# MirrorMaker 2's default exclusions, for the same reasons: replication throttles and
# min.insync.replicas/unclean elections follow the target's own replication setup, and
# a LogAppendTime target would overwrite the source timestamps the records carry.
DEFAULT_EXCLUDED_CONFIGS: tuple[str, ...] = (
    r"follower\.replication\.throttled\.replicas",
    r"leader\.replication\.throttled\.replicas",
    r"message\.timestamp\.difference\.max\.ms",
    r"message\.timestamp\.type",
    r"unclean\.leader\.election\.enable",
    r"min\.insync\.replicas",
)


@dataclass(frozen=True, slots=True)
class ConfigFilter:
    """Which topic config properties a route copies: all but the excluded ones.

    Each exclusion is a regex matched against the whole property name, so a plain
    name (``retention.bytes``) excludes just that property.
    """

    extra_exclusions: tuple[str, ...] = ()
    _patterns: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        patterns = (*DEFAULT_EXCLUDED_CONFIGS, *self.extra_exclusions)
        object.__setattr__(self, "_patterns", tuple(re.compile(p) for p in patterns))

    def should_replicate_config_property(self, name: str) -> bool:
        """False when ``name`` matches an exclusion."""
        return not any(p.fullmatch(name) for p in self._patterns)

    def copyable(self, configs: Mapping[str, str]) -> dict[str, str]:
        """The entries of ``configs`` this filter copies."""
        return {k: v for k, v in configs.items() if self.should_replicate_config_property(k)}


def diff_configs(
    source: Mapping[str, str], target: Mapping[str, str], config_filter: ConfigFilter
) -> tuple[ConfigChange, ...]:
    """The changes that give ``target`` the copyable overrides of ``source``, sorted by name.

    Both sides are topic-level overrides. A copyable override the target has and the
    source dropped is removed (new = None), so the target falls back to its default;
    excluded properties are left as the target has them.
    """
    wanted, current = config_filter.copyable(source), config_filter.copyable(target)
    changes = [ConfigChange(k, current.get(k), v) for k, v in wanted.items() if current.get(k) != v]
    changes += [ConfigChange(k, v, None) for k, v in current.items() if k not in wanted]
    return tuple(sorted(changes))


def plan_configs(
    pairs: Iterable[tuple[str, str]],
    source: Mapping[str, Mapping[str, str]],
    target: Mapping[str, Mapping[str, str]],
    config_filter: ConfigFilter,
) -> list[AlterTopicConfig]:
    """One ``AlterTopicConfig`` per (source topic, target topic) pair whose configs differ.

    Pairs where either side was not described (a topic still to be created, or one
    deleted meanwhile) are skipped: creating a topic carries its configs.
    """
    actions = []
    for source_topic, target_topic in pairs:
        if source_topic not in source or target_topic not in target:
            continue
        changes = diff_configs(source[source_topic], target[target_topic], config_filter)
        if changes:
            actions.append(AlterTopicConfig(target_topic, changes))
    return actions
