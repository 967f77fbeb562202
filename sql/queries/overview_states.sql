-- Per route, partitions in a state the state DB knows: what workers recorded (STUCK, FAULTED), the operator's
-- paused and failed-over topics (counted as topics), partitions that lost records to retention.
SELECT route, state, count(*) AS n FROM mf_partition_state GROUP BY route, state
UNION ALL
SELECT r.name AS route, 'PAUSED' AS state, count(*) AS n
FROM mf_route_topic t JOIN mf_route r ON t.route_id = r.id
WHERE t.desired_state = 'paused'
GROUP BY r.name
UNION ALL
SELECT r.name AS route, 'FAILED_OVER' AS state, count(*) AS n
FROM mf_route_topic t JOIN mf_route r ON t.route_id = r.id
WHERE t.desired_state = 'failed-over'
GROUP BY r.name
UNION ALL
SELECT route, 'LOST_RECORDS' AS state, count(*) AS n
FROM (SELECT DISTINCT route, topic, "partition" FROM mf_data_loss) lost
GROUP BY route
ORDER BY route, state
