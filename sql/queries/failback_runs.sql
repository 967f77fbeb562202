-- The route's failback runs, newest first, every column (run only when the table
-- mf_failback_run exists; the page picks the columns it knows).
SELECT *
FROM mf_failback_run
WHERE route = :route
ORDER BY id DESC
LIMIT :limit
