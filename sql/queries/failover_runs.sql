-- The route's failover runs, newest first.
SELECT id, source_cluster, target_cluster, mode, status, stopped_at_step, source_reachable,
       rpo_records, rpo_basis, rto_seconds, triggered_at, finished_at, released_at, route_stopped_at
FROM mf_failover_run
WHERE route = :route
ORDER BY id DESC
LIMIT :limit
