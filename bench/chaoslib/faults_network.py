"""Faults of the network between the workers and one cluster (the side is drawn from the seed),
made by Toxiproxy toxics on both directions of that cluster's proxies (one per node). The verifier's own
producer and reader use the direct listeners and are not affected."""

from __future__ import annotations

from bench.chaoslib.cluster import SIDES
from bench.chaoslib.context import Chaos, Injected


def _toxic(chaos: Chaos, kind: str, attributes: dict[str, int], hold_s: float, what: str) -> Injected:
    side = chaos.rng.choice(SIDES)
    return Injected(side, what, hold_s, chaos.sides[side].toxic(chaos.proxies, kind, kind, attributes))


def net_latency(chaos: Chaos) -> Injected:
    """Every byte each way delayed (latency +/- jitter)."""
    latency = chaos.rng.choice((100, 300, 1000))
    return _toxic(chaos, "latency", {"latency": latency, "jitter": latency // 5},
                  chaos.hold(2, chaos.settings.fault_seconds), f"+{latency} ms each way")


def net_bandwidth(chaos: Chaos) -> Injected:
    """A bandwidth cap each way (KB/s)."""
    rate = chaos.rng.choice((8, 32, 128))
    return _toxic(chaos, "bandwidth", {"rate": rate}, chaos.hold(2, chaos.settings.fault_seconds),
                  f"{rate} KB/s each way")


def net_reset(chaos: Chaos) -> Injected:
    """Connections reset (TCP RST) as soon as they carry data, for a moment."""
    return _toxic(chaos, "reset_peer", {"timeout": 0}, chaos.hold(0.5, 3), "every connection reset")


def net_partition(chaos: Chaos) -> Injected:
    """A black hole: nothing passes either way, connections stay open (timeout=0)."""
    return _toxic(chaos, "timeout", {"timeout": 0}, chaos.hold(2, chaos.settings.fault_seconds), "black hole")


def node_partition(chaos: Chaos) -> Injected:
    """One node black-holed for the workers while its cluster sees it healthy (an asymmetric partition): it keeps
    leading its partitions, which the workers cannot reach until the heal; the rest must go on. With one node per
    cluster, the whole side (as net-partition)."""
    side = chaos.rng.choice(SIDES)
    cluster = chaos.sides[side]
    node = cluster.pick(chaos.rng.choice)
    struck = cluster.led_by(node)
    remove = cluster.toxic(chaos.proxies, "node-partition", "timeout", {"timeout": 0}, node)
    what = "black hole" if node is None else f"node {node + 1} black-holed for the workers"
    return Injected(side, what, chaos.hold(2, chaos.settings.fault_seconds), remove, struck=struck)


KINDS = {
    "net-latency": net_latency,
    "net-bandwidth": net_bandwidth,
    "net-reset": net_reset,
    "net-partition": net_partition,
    "node-partition": node_partition,
}
