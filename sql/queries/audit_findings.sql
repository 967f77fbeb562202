-- Buckets of the route's audits that are not clean, newest bucket first, with the
-- first offsets found missing, duplicated (source offsets) or extra (target offsets).
SELECT a.run_key, r.topic, r.target_topic, r.partition, r.bucket_start, r.status,
       r.source_count, r.target_count, r.pending, r.missing_count, r.duplicate_count,
       r.extra_count, r.missing_offsets, r.duplicate_offsets, r.extra_offsets
FROM mf_audit_result r
JOIN mf_audit_run a ON a.id = r.run_id
WHERE r.route = :route AND r.status <> 'clean'
ORDER BY r.bucket_start DESC, r.topic, r.partition, a.started_at DESC
LIMIT :limit
