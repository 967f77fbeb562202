-- The route's SLA breaches and recoveries, newest first.
SELECT "check", kind, at, detail, notified_at, notify_error
FROM mf_sla_event
WHERE route = :route
ORDER BY at DESC, id DESC
LIMIT :limit
