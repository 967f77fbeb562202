"""In-memory fakes of confluent-kafka's clients that behave like librdkafka's where the hot path cares.

For tests of the hot path without brokers (back-pressure, rebalances, outages):

- ``FakeProducer``: a bounded queue (``queue.buffering.max.messages``) whose ``produce``
  raises ``BufferError`` when full; delivery reports are served from ``poll``/``flush``
  only, and a record still counts against the queue while its report runs (so a
  ``produce`` from inside a delivery callback can fail, as it does in librdkafka). A record
  larger than its topic's ``max.message.bytes`` is refused with ``MSG_SIZE_TOO_LARGE``, as the broker does.
  An exception escaping a callback escapes ``poll`` (confluent-kafka re-raises it, on
  Python 3.11 as a ``SystemError`` for errors raised in C).
- ``FakeConsumer``: rebalance callbacks served from ``consume`` (KIP-848 style: incremental,
  a partition moves to its new owner only after the old owner revoked it; a member whose
  session expired gets ``on_lost``), pause/resume, seek, committed offsets with metadata,
  ``auto.offset.reset=error`` as an ``_AUTO_OFFSET_RESET`` error message.
- ``FakeAdmin``: topics, partitions, ids and configs of a ``FakeCluster``.
- ``FakeTransactionalProducer`` (a producer with ``transactional.id``): librdkafka's transaction
  API over the cluster's coordinator (``transactions``): fencing by a newer producer of the same id,
  abortable transactions, commit/abort markers, group offsets committed with the transaction. Consumers
  read ``read_committed`` by default (librdkafka's default): up to the last stable offset, aborted
  records skipped.

A ``FakeCluster`` can be frozen (nothing delivered, fetched or answered: a SIGSTOPped
broker) and thawed; ``FakeKafka.clients()`` hands the fakes to a ``RouteWorker``.
"""

from replicator.testing.cluster import FakeCluster, FakeRecord
from replicator.testing.kafka import FakeKafka

__all__ = ["FakeCluster", "FakeKafka", "FakeRecord"]
