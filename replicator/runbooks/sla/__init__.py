"""Replication SLAs: heartbeats on the source, observation of each route, alerts through notifiers."""
