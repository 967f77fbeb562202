"""Database URLs (and messages that quote one) never show a password."""

from __future__ import annotations

import pytest

from replicator.domain.secrets import MASK, redact_url


@pytest.mark.parametrize(("given", "shown"), [
    ("postgresql+psycopg://app:s3cr%40t@db:5432/mf", f"postgresql+psycopg://app:{MASK}@db:5432/mf"),
    ("postgresql://app@db/mf", "postgresql://app@db/mf"),
    ("postgresql://db/mf?sslmode=require&password=pw1", f"postgresql://db/mf?sslmode=require&password={MASK}"),
    ("postgresql://u:@db/mf", f"postgresql://u:{MASK}@db/mf"),
    ("sqlite:///.mirrorflow/state.db", "sqlite:///.mirrorflow/state.db"),
    ("cannot use mysql://root:hunter2@h/x: no driver", f"cannot use mysql://root:{MASK}@h/x: no driver"),
    ("dsn host=db password='p w' user=app", f"dsn host=db password={MASK} user=app"),
    ("db?sslkey=/k.pem&sslpassword=kp", f"db?sslkey=/k.pem&sslpassword={MASK}"),
])
def test_redact_url(given: str, shown: str) -> None:
    assert redact_url(given) == shown
