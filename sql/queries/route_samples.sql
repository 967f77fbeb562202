-- What the SLA DAG measured of the route at each check beyond its lag (mf_route_sample, migration 0017): records
-- copied so far and the replication latency, oldest first.
SELECT at, copied, latency_ms
FROM mf_route_sample
WHERE route = :route AND at >= :since
ORDER BY at
LIMIT :limit
