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


# ``scheme://user:PASSWORD@host``: SQLAlchemy's own URL grammar ends the password at the first '@'.
_URL_PASSWORD = re.compile(r"(?P<head>://[^:/@\s]*:)[^@\s]*(?=@)")
# ``?password=...``, ``&sslpassword=...``, libpq's ``password='...'``: any key that names a secret.
_ASSIGNMENT = re.compile(r"(?P<key>[A-Za-z0-9_.]+)=(?P<value>'[^']*'|[^&\s'\"]*)")


def redact_url(text: str) -> str:
    """``text`` (a database URL, or a message quoting one) with every password in it masked."""
    text = _URL_PASSWORD.sub(lambda m: m["head"] + MASK, text)
    return _ASSIGNMENT.sub(lambda m: f"{m['key']}={MASK}" if is_secret_key(m["key"]) else m[0], text)
