"""MirrorFlow: cross-cluster Apache Kafka replication."""

__version__ = "0.1.0"
