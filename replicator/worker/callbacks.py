"""librdkafka calls our code back from inside ``poll``/``consume``/``flush``: that code must never raise.

An exception escaping a callback is re-raised by confluent-kafka from the call that
served it — on Python 3.11, for an error raised in C (a ``BufferError`` of ``produce``),
as ``SystemError: _PyErr_SetObject: exception <class 'str'> is not a BaseException
subclass``, because it restores the unnormalised exception. ``shielded`` hands any
exception to the owner's ``callback_failed`` instead; the worker then stops without
committing anything more (its bookkeeping may be half-updated).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Protocol, TypeVar


class CallbackOwner(Protocol):
    """An object whose methods librdkafka calls back."""

    def callback_failed(self, name: str, exc: Exception) -> None:
        """Record that the callback ``name`` raised ``exc``; must not raise itself."""


Owner = TypeVar("Owner", bound=CallbackOwner)


def shielded(name: str) -> Callable[[Callable[..., Any]], Callable[..., None]]:
    """Decorate a callback method so that nothing it raises reaches librdkafka."""
    def wrap(method: Callable[..., Any]) -> Callable[..., None]:
        @functools.wraps(method)
        def call(self: CallbackOwner, *args: Any) -> None:
            try:
                method(self, *args)
            except Exception as exc:  # noqa: BLE001 - nothing may escape into librdkafka
                self.callback_failed(name, exc)
        return call
    return wrap
