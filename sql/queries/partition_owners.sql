-- The route's partitions and the running worker that placed each (mf_partition_owner, migration 0015).
SELECT worker, topic, "partition", since
FROM mf_partition_owner
WHERE route = :route
ORDER BY worker, topic, "partition"
LIMIT :limit
