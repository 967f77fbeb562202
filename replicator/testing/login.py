"""The SASL login a fake client was made with, and librdkafka's way of changing it.

confluent-kafka aborts the whole process (a C assertion, ``CallState_get: Assertion `cs != NULL' failed``) when
a client method that releases the GIL, such as ``set_sasl_credentials``, is called from inside one of its
callbacks (``error_cb`` served by ``consume``): the fakes raise ``FakeAbort`` then, which nothing catches.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_SERVING = threading.local()


class FakeAbort(BaseException):
    """The process would have died here (a C assertion in confluent-kafka): not an exception anyone handles."""


@contextmanager
def serving_callback() -> Iterator[None]:
    """A fake client runs one of the application's callbacks in this block."""
    _SERVING.depth = getattr(_SERVING, "depth", 0) + 1
    try:
        yield
    finally:
        _SERVING.depth -= 1


class FakeLogin:
    """``set_sasl_credentials`` as librdkafka's: the login of the next authentication; a closed client raises."""

    closed = False
    login: tuple[str, str] = ("", "")

    def _remember_login(self, settings: dict[str, Any]) -> None:
        self.login = (str(settings.get("sasl.username", "")), str(settings.get("sasl.password", "")))

    def set_sasl_credentials(self, username: str, password: str) -> None:
        """Log in with these from the next authentication on."""
        if getattr(_SERVING, "depth", 0):
            raise FakeAbort("CallState_get: Assertion `cs != NULL' failed: set_sasl_credentials called from "
                            "inside a client callback")
        if self.closed:
            raise RuntimeError("Handle has been closed")
        self.login = (username, password)
