-- Routes a failover holds (stopped, not released): the overview says FAILED_OVER.
SELECT route, max(id) AS run_id
FROM mf_failover_run
WHERE route_stopped_at IS NOT NULL AND released_at IS NULL
GROUP BY route
ORDER BY route
