"""Faults of processes: workers (kill, freeze, join, leave, all restarted together), brokers
(freeze, kill, clean restart: of the whole side, or of one node of several, see cluster.py) and the
state database (stopped, locked by another writer)."""

from __future__ import annotations

import signal
import time

from bench.chaoslib.context import SESSION_TIMEOUT_S, Chaos, FaultFn, Injected

RESTART_DELAY_S = 2.0  # RestartSec of a systemd unit: how long a killed worker stays down


def worker_kill(chaos: Chaos) -> Injected:
    """SIGKILL one worker; the supervisor starts it again under the same --worker-id."""
    worker = chaos.pick_worker()
    chaos.supervisor.kill(worker)
    return Injected(None, f"worker {worker}", RESTART_DELAY_S, lambda: chaos.supervisor.start(worker))


def worker_freeze(chaos: Chaos) -> Injected:
    """SIGSTOP one worker past the group's session timeout (its partitions move), then SIGCONT."""
    worker = chaos.pick_worker()
    chaos.supervisor.signal(worker, signal.SIGSTOP)
    return Injected(None, f"worker {worker}", chaos.hold(SESSION_TIMEOUT_S + 4, SESSION_TIMEOUT_S + 8),
                    lambda: chaos.supervisor.signal(worker, signal.SIGCONT))


def worker_join(chaos: Chaos) -> Injected:
    """One more worker joins the route's group (it stays until a worker-leave)."""
    chaos.serial += 1
    worker = f"x{chaos.serial}"
    chaos.supervisor.start(worker)
    chaos.extras.append(worker)
    return Injected(None, f"worker {worker} joined", chaos.hold(2, chaos.settings.fault_seconds))


def worker_leave(chaos: Chaos) -> Injected:
    """One worker stops cleanly (SIGTERM): an extra one if any, else a regular one, started again after."""
    if chaos.extras:
        worker = chaos.extras.pop(0)
        code = chaos.supervisor.stop(worker)
        return Injected(None, f"worker {worker} left (exit {code})", chaos.hold(2, chaos.settings.fault_seconds))
    worker = chaos.pick_worker()
    code = chaos.supervisor.stop(worker)
    return Injected(None, f"worker {worker} left (exit {code}), back after the fault",
                    chaos.hold(2, chaos.settings.fault_seconds), lambda: chaos.supervisor.start(worker))


def workers_start_together(chaos: Chaos) -> Injected:
    """Every worker killed, then all started at the same moment."""
    workers = chaos.running_workers()
    for worker in workers:
        chaos.supervisor.kill(worker)
    return Injected(None, f"workers {','.join(workers)}", 1.0, lambda: chaos.supervisor.start(*workers))


def _node(node: int | None) -> str:
    return "broker" if node is None else f"node {node + 1}"


def _broker_freeze(side: str) -> FaultFn:
    def inject(chaos: Chaos) -> Injected:
        cluster = chaos.sides[side]
        node = cluster.pick(chaos.rng.choice)
        struck = cluster.led_by(node)
        cluster.freeze(node)
        return Injected(side, f"{_node(node)} SIGSTOP", chaos.hold(2, chaos.settings.fault_seconds), cluster.thaw,
                        struck=struck)
    return inject


def _broker_kill(side: str) -> FaultFn:
    def inject(chaos: Chaos) -> Injected:
        cluster = chaos.sides[side]
        node = cluster.pick(chaos.rng.choice)
        struck = cluster.led_by(node)
        cluster.kill(node)
        return Injected(side, f"{_node(node)} SIGKILL", chaos.hold(1, 3), lambda: cluster.start(node), struck=struck)
    return inject


def _broker_restart(side: str) -> FaultFn:
    """A clean restart: of the whole side (one node), or a rolling restart of every node, one after the other."""
    def inject(chaos: Chaos) -> Injected:
        cluster = chaos.sides[side]
        node = cluster.pick(chaos.rng.choice)
        began = time.monotonic()
        cluster.stop(node)
        stopped = f"{_node(node)} stopped cleanly in {time.monotonic() - began:.1f}s"
        if node is None:
            return Injected(side, stopped, chaos.hold(1, 3), cluster.start)
        return Injected(side, f"rolling restart, {stopped} first", chaos.hold(1, 3),
                        lambda: cluster.roll(node, chaos.stand))
    return inject


def statedb_stop(chaos: Chaos) -> Injected:
    """PostgreSQL stopped, started again after the fault."""
    chaos.statedb.stop_server()
    return Injected(None, "postgres stopped", chaos.hold(2, chaos.settings.fault_seconds),
                    chaos.statedb.start_server)


def statedb_lock(chaos: Chaos) -> Injected:
    """Another writer holds the state database (SQLite) or the route's tables (PostgreSQL)."""
    began = time.monotonic()
    chaos.statedb.hold()
    return Injected(None, f"{chaos.statedb.kind} locked (took {time.monotonic() - began:.1f}s to get)",
                    chaos.hold(2, chaos.settings.fault_seconds), chaos.statedb.release)


KINDS = {
    "worker-kill": worker_kill,
    "worker-freeze": worker_freeze,
    "worker-join": worker_join,
    "worker-leave": worker_leave,
    "workers-start-together": workers_start_together,
    "source-freeze": _broker_freeze("source"),
    "target-freeze": _broker_freeze("target"),
    "source-kill": _broker_kill("source"),
    "target-kill": _broker_kill("target"),
    "source-restart": _broker_restart("source"),
    "target-restart": _broker_restart("target"),
    "statedb-stop": statedb_stop,
    "statedb-lock": statedb_lock,
}
