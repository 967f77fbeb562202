"""Which client properties are secrets, and how they are shown."""

from __future__ import annotations

import re
from collections.abc import Mapping

MASK = "********"

# librdkafka/Java names that carry a credential: sasl.password, ssl.key.password,
# ssl.keystore.password, ssl.key.pem, ssl.keystore.location's password,
# sasl.oauthbearer.client.secret, sasl.jaas.config (embeds a password), ...
_SECRET_KEY = re.compile(r"(password|secret|jaas\.config|\.pem$|credentials?|token)", re.IGNORECASE)


def is_secret_key(key: str) -> bool:
    """True when the value of ``key`` must never be printed."""
    return bool(_SECRET_KEY.search(key))


def redact(properties: Mapping[str, object]) -> dict[str, object]:
    """A copy of ``properties`` with every secret value masked, for logs and output."""
    return {key: (MASK if is_secret_key(key) else value) for key, value in properties.items()}
