"""Checkpoints of a route: read both clusters, translate consumer-group offsets, store and apply them.

``offsets`` (committed offsets, read and written without joining a group), ``groups``
(listing and describing groups), ``syncs`` (the route's offset-syncs topic),
``topic`` (the checkpoints topic), ``read`` (everything a run needs, then the pure
translation) and ``run`` (what the CLI and the DAG call).
"""
