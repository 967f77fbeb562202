"""Failover of a route, step by step (the pure decisions: :mod:`replicator.domain.failover`).

``source`` (is the source reachable, the route's workers and lag), ``points``
(where each group resumes: final or stored checkpoints, or offsets-for-times),
``commits`` (commit into the target's groups, read back), ``guard`` (a failed-over
route refuses to run), ``steps`` (one function per step) and ``run`` (start or
resume a run, run its steps, store it: what the CLI and the DAG call).
"""
