-- Where each SLA check of the route stands (the lag check's detail is the latest lag).
SELECT "check", state, since, detail, checked_at
FROM mf_sla_state
WHERE route = :route
ORDER BY "check"
