"""An ACL as plain, hashable data, so ACL sync diffs sets of them.

The names follow Kafka's (``TOPIC``, ``LITERAL``, ``READ``, ``ALLOW``); the adapter
for confluent-kafka converts to and from its ``AclBinding``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

TOPIC, GROUP = "TOPIC", "GROUP"
LITERAL, PREFIXED = "LITERAL", "PREFIXED"
ALLOW, DENY = "ALLOW", "DENY"
WILDCARD = "*"


@dataclass(frozen=True, slots=True, order=True)
class AclSpec:
    """One ACL binding: a resource pattern and one access control entry."""

    resource_type: str
    name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str

    def covers_topic(self, topic: str) -> bool:
        """True when this (topic) ACL applies to ``topic``: literal name, prefix or ``*``."""
        if self.resource_type != TOPIC:
            return False
        if self.pattern_type == PREFIXED:
            return topic.startswith(self.name)
        return self.pattern_type == LITERAL and self.name in (topic, WILDCARD)

    def on_topic(self, topic: str) -> AclSpec:
        """The same entry on the literal topic ``topic``."""
        return replace(self, resource_type=TOPIC, name=topic, pattern_type=LITERAL)

    @property
    def resource(self) -> str:
        """``topic orders``, ``group app (prefixed)``: the resource, for tables and logs."""
        suffix = "" if self.pattern_type == LITERAL else f" ({self.pattern_type.lower()})"
        return f"{self.resource_type.lower()} {self.name}{suffix}"

    @property
    def entry(self) -> str:
        """``ALLOW User:alice READ from *``: the access control entry, for tables and logs."""
        return f"{self.permission} {self.principal} {self.operation} from {self.host}"
