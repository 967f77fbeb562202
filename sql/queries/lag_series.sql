-- The route's lag per topic over time, as the SLA DAG measured it, oldest first.
SELECT topic, at, lag
FROM mf_lag_sample
WHERE route = :route AND at >= :since
ORDER BY topic, at
LIMIT :limit
