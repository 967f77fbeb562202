-- The route's latest audit runs, newest first.
SELECT run_key, status, window_start, window_end, bucket_seconds, topics,
       source_records, target_records, pending, missing, duplicates, extra, notes,
       started_at, finished_at
FROM mf_audit_run
WHERE route = :route
ORDER BY started_at DESC, id DESC
LIMIT :limit
