"""Development tooling: local clusters, local Airflow and PostgreSQL, the demo, process trees.

Used by `mirrorflow dev`, `mirrorflow demo` and the tests; nothing of the replicator needs it.
"""
