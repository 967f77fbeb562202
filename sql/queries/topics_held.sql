-- The route's topics the operator paused or a per-topic failover moved, and since when.
SELECT t.topic, t.desired_state, t.updated_at
FROM mf_route_topic t JOIN mf_route r ON t.route_id = r.id
WHERE r.name = :route AND t.desired_state IN ('paused', 'failed-over')
ORDER BY t.topic
LIMIT :limit
