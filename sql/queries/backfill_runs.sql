-- The route's backfill runs, newest first (run only when the table mf_backfill_run
-- exists; ranges is JSON: the planned source offsets per partition).
SELECT id, run_key, topic, target_topic, mode, ranges, status, records_written, records_total,
       overlap_ok, started_at, finished_at, error
FROM mf_backfill_run
WHERE route = :route
ORDER BY id DESC
LIMIT :limit
