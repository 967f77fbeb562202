"""SASL logins that follow their files: a password rotated in a ``${file:}`` reaches a running worker.

A cluster refuses a login once its password is rotated (on a re-authentication, a reconnect, a new client).
When that happens to a cluster whose ``sasl.username``/``sasl.password`` come from files, the files are read
again (``refused``, from the client's ``error_cb``); if they changed, every client made from then on is made
with the new login, and the worker's loop gives it to every live client of that cluster (``apply``: librdkafka's
``set_sasl_credentials``, used at its next authentication; the connections it has stay up). Nothing restarts,
no partition moves. A value from the environment cannot change under a running process: rotating it takes a
restart.

``apply`` never runs inside a client callback: confluent-kafka aborts the process (a C assertion,
``CallState_get: Assertion `cs != NULL' failed``) when ``set_sasl_credentials`` is called from one.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from replicator.config import Config
from replicator.errors import ConfigError
from replicator.kafka.clients import ClientFactory

log = logging.getLogger(__name__)

REREAD_EVERY_S = 5.0  # while a cluster keeps refusing, its files are read at most this often


class Logins:
    """The SASL logins of one worker's clients, per cluster, and the clients that use them."""

    def __init__(self, config: Config, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()  # error callbacks of several clients, the topic refresh's thread
        self._clusters = {name: c for name, c in config.clusters.items() if c.login_files}
        # A client's cluster, told by the settings it was made with: bootstrap servers and configured login.
        self._cluster_of = {(c.bootstrap_servers, *c.login()): name for name, c in self._clusters.items()}
        self._login = {name: c.login() for name, c in self._clusters.items()}
        self._clients: dict[str, weakref.WeakSet[Any]] = {name: weakref.WeakSet() for name in self._clusters}
        self._read_at: dict[str, float] = {}
        self._unreadable: dict[str, str] = {}
        self._pending: set[str] = set()  # clusters whose live clients have not been given their new login yet

    def factory(self, clients: ClientFactory) -> ClientFactory:
        """``clients``, making each client with the current login of its cluster and keeping track of it."""
        if not self._clusters:
            return clients
        return dataclasses.replace(clients, consumer=self._tracked(clients.consumer),
                                   producer=self._tracked(clients.producer), admin=self._tracked(clients.admin),
                                   assignment=self._logged_in(clients.assignment))

    def _cluster(self, settings: Mapping[str, Any]) -> str | None:
        """The cluster whose login files ``settings`` were made with (None: none of them)."""
        return self._cluster_of.get((str(settings.get("bootstrap.servers")), str(settings.get("sasl.username", "")),
                                     str(settings.get("sasl.password", ""))))

    def _logged_in(self, ask: Callable[..., Any]) -> Callable[..., Any]:
        """``ask`` (a request with client properties: see ClientFactory.assignment) with the current login."""
        def asked(properties: Mapping[str, str], *args: Any) -> Any:
            name = self._cluster(properties)
            if name is None:
                return ask(properties, *args)
            with self._lock:
                user, password = self._login[name]
            return ask({**properties, "sasl.username": user, "sasl.password": password}, *args)

        return asked

    def _tracked(self, make: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        def made(settings: dict[str, Any]) -> Any:
            name = self._cluster(settings)
            if name is None:
                return make(settings)
            with self._lock:
                user, password = self._login[name]
                client = make({**settings, "sasl.username": user, "sasl.password": password})
                try:
                    self._clients[name].add(client)
                except TypeError:  # not weakly referable: made with the current login, not told of a later one
                    log.debug("a client of cluster %s cannot be kept track of: %s", name, type(client).__name__)
            return client

        return made

    def refused(self, cluster: str) -> bool:
        """``cluster`` refused a login: read its login files again (at most every few seconds); when they
        changed, new clients get the new login and ``apply`` gives it to the live ones. True when they changed.
        Never raises; calls no client (it runs in their callbacks)."""
        if cluster not in self._clusters:
            return False
        now = self._clock()
        with self._lock:
            if now < self._read_at.get(cluster, float("-inf")) + REREAD_EVERY_S:
                return False
            self._read_at[cluster] = now
            try:
                login = self._clusters[cluster].reread_login()
            except ConfigError as exc:
                if self._unreadable.get(cluster) != str(exc):
                    log.error("cannot read the login of cluster %s again: %s", cluster, exc)
                self._unreadable[cluster] = str(exc)
                return False
            self._unreadable.pop(cluster, None)
            if login == self._login[cluster]:
                return False
            self._login[cluster] = login
            self._pending.add(cluster)
        return True

    def apply(self) -> None:
        """Give the live clients of each cluster whose login changed the new one (outside any callback)."""
        if not self._pending:
            return
        with self._lock:
            done = [(cluster, self._login[cluster], list(self._clients[cluster])) for cluster in self._pending]
            self._pending.clear()
        for cluster, login, clients in done:
            for client in clients:
                try:
                    client.set_sasl_credentials(*login)
                except RuntimeError:  # closed since: nothing to tell it
                    pass
            log.warning("cluster %s: login read again from %s; %d live client(s) log in with it from now on",
                        cluster, ", ".join(sorted(self._clusters[cluster].login_files.values())), len(clients))
