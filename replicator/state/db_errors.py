"""What a failed state-database call means, in one line without secrets.

Drivers say why in words more often than in codes (psycopg leaves ``sqlstate`` empty
for a refused connection; SQLite has no codes in its messages), so both are read.
The first match wins: a refused login also starts with "connection failed".
"""

from __future__ import annotations

import re
from typing import Literal

from sqlalchemy.engine import URL
from sqlalchemy.exc import DBAPIError

from replicator.domain.secrets import MASK, redact_url
from replicator.errors import StateStoreError

Cause = Literal["login", "missing", "unreachable", "locked", "read-only", "other"]

_SQLSTATES: tuple[tuple[Cause, str], ...] = (
    ("login", "28"), ("missing", "3D000"), ("unreachable", "08"), ("unreachable", "57P0"),
    ("unreachable", "53300"), ("read-only", "25006"), ("read-only", "42501"),
    ("locked", "40001"), ("locked", "40P01"), ("locked", "55P03"),
)
_WORDS: tuple[tuple[Cause, str], ...] = (
    ("login", r"authentication failed|role \".*\" does not exist|no pg_hba\.conf entry|no password supplied"),
    ("missing", r"database \".*\" does not exist"),
    ("unreachable", (r"connection refused|timeout expired|timed out|could not connect|no route to host|"
                     r"network is unreachable|server closed the connection|terminating connection|"
                     r"database system is (starting up|shutting down|in recovery)|connection is closed|"
                     r"consuming input failed|ssl syscall|connection reset|resolve host|translate host name|"
                     r"name or service not known|name resolution|too many clients")),
    ("locked", r"database (table )?is locked|lock timeout|deadlock detected"),
    ("read-only", r"readonly database|read-only|permission denied|unable to open database file"),
)
_SAYS: dict[Cause, str] = {
    "login": "state database refused the login", "missing": "state database does not exist",
    "unreachable": "state database unreachable", "locked": "state database locked by another writer",
    "read-only": "state database not writable",
}


def cause_of(exc: DBAPIError) -> Cause:
    """Why ``exc`` happened, as far as the driver tells."""
    state = str(getattr(exc.orig, "sqlstate", None) or getattr(exc.orig, "pgcode", None) or "")
    for cause, prefix in _SQLSTATES:
        if state.startswith(prefix):
            return cause
    for cause, words in _WORDS:
        if re.search(words, str(exc.orig), re.IGNORECASE):
            return cause
    return "unreachable" if exc.connection_invalidated else "other"


def shown_url(url: URL) -> str:
    """``url`` as logs and errors may show it: every password masked."""
    return redact_url(url.render_as_string(hide_password=False))


def state_error(exc: DBAPIError, url: URL, action: str) -> StateStoreError:
    """``exc`` as one line naming its cause; retriable when the database may answer if asked again."""
    cause = cause_of(exc)
    lines = str(exc.orig).strip().splitlines()
    detail = redact_url(lines[0] if lines else type(exc.orig).__name__)
    if url.password and len(url.password) >= 4:  # a driver quoting its DSN back must not leak it either
        detail = detail.replace(url.password, MASK)
    says = _SAYS.get(cause, f"state database {action} failed")
    return StateStoreError(f"{says} ({shown_url(url)}): {detail}", retriable=cause in ("unreachable", "locked"),
                           exit_code=2 if cause in ("login", "missing") else 1)
