"""The runbooks (sync, checkpoints, failover, failback, audit, backfill, SLA) and the one engine
that runs the steps of failover, failback and the next runbook.

``engine`` (run one step: skip it when finished, refuse it out of order, store the
run after it, fail with the cause chained), ``start`` (resume the route's unfinished
run, abandon it on ``--restart``, or store a new one), ``store`` (where runs are
kept), ``context`` (what every step of a MirrorFlow runbook gets). The run record
itself is pure: :mod:`replicator.domain.runbook`.
"""
