"""Control-plane operations: the functions Airflow tasks and CLI commands call."""
