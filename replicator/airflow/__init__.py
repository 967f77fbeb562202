"""What the DAGs use from MirrorFlow: the Spark submit operator, the routes a scheduled DAG acts on, the runbook DAG."""
