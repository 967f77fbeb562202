-- Every route's latest audit run (the overview).
SELECT route, run_key, status, missing, finished_at
FROM mf_audit_run
WHERE id IN (SELECT max(id) FROM mf_audit_run GROUP BY route)
ORDER BY route
