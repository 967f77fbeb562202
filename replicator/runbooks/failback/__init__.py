"""Failback of a failed-over route, step by step (the pure decisions: :mod:`replicator.domain.failback`).

``reverse`` (the reverse route: its replicas, running it until caught up, what is
left to copy), ``steps`` (one function per step) and ``run`` (start or resume a
run, run its steps, store it: what the CLI and the DAG call).
"""
