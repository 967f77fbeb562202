-- Source vs target record counts per topic and time bucket from a given time (summed over
-- partitions), newest first: a limit cuts the oldest buckets. A bucket audited more than
-- once counts as its newest audit found it.
SELECT r.topic, r.bucket_start,
       SUM(r.source_count) AS source_count, SUM(r.target_count) AS target_count,
       SUM(r.pending) AS pending, SUM(r.missing_count) AS missing_count,
       SUM(r.duplicate_count) AS duplicate_count, SUM(r.extra_count) AS extra_count
FROM mf_audit_result r
WHERE r.route = :route AND r.bucket_start >= :since
  AND r.run_id = (SELECT MAX(n.run_id) FROM mf_audit_result n
                  WHERE n.route = r.route AND n.topic = r.topic
                    AND n.partition = r.partition AND n.bucket_start = r.bucket_start)
GROUP BY r.topic, r.bucket_start
ORDER BY r.bucket_start DESC, r.topic
LIMIT :limit
