"""The hot path: a long-running worker per route (``mirrorflow run``)."""
