"""Adapters over confluent-kafka (librdkafka): the only place that imports it."""
