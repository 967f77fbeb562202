"""Pure domain logic: no Kafka, Airflow, Spark or SQLAlchemy imports here (a test enforces it)."""
