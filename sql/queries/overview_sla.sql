-- Every route's SLA checks as they stand (the overview: breached checks, the latest lag).
SELECT route, "check", state, detail, checked_at
FROM mf_sla_state
ORDER BY route, "check"
