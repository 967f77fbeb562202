-- The route's latest sync run and each change it made (kind, resource, old -> new, outcome), in order.
SELECT r.id AS run_id, r.step, r.status, r.started_at, r.finished_at, r.notes,
       c.kind, c.resource, c.detail, c.outcome, c.error
FROM mf_sync_run r
LEFT JOIN mf_sync_change c ON c.run_id = r.id
WHERE r.id = (SELECT max(id) FROM mf_sync_run WHERE route = :route)
ORDER BY c.position
LIMIT :limit
