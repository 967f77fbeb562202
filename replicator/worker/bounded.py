"""A blocking librdkafka call that may never return, run so that the caller does not wait past a deadline.

librdkafka's transactional calls wait for their result without a bound of their own when
the group coordinator they need went away and came back (``send_offsets_to_transaction``
ignores its timeout: librdkafka issues #5456 and #5511, still open in 2.16). Found by the
fault harness: a target killed and restarted left both workers' loops blocked in it for
good. The call runs in a thread of its own; past its deadline the caller gets ``Hung``
and replaces the client. The thread stays blocked and keeps the client alive: a client
whose call never returns is never destroyed (destroying it could block as well).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

GRACE_S = 2.0  # beyond the call's own timeout: it had its chance to time out by itself


class Hung(Exception):
    """The call did not return by its deadline (it may still, or never)."""


def bounded(what: str, call: Callable[[], None], timeout: float) -> None:
    """Run ``call``; re-raise what it raises; ``Hung`` when it has not returned within ``timeout`` + grace."""
    done = threading.Event()
    failed: list[BaseException] = []

    def run() -> None:
        try:
            call()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
            failed.append(exc)
        finally:
            done.set()

    threading.Thread(target=run, name=f"bounded-{what}", daemon=True).start()
    if not done.wait(timeout + GRACE_S):
        raise Hung(f"{what} did not return in {timeout + GRACE_S:.0f} s")
    if failed:
        raise failed[0]
