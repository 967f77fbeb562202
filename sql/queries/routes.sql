-- Every route the state DB knows: configured, audited, checked, checkpointed or failed over.
SELECT name AS route FROM mf_route
UNION SELECT route FROM mf_audit_run
UNION SELECT route FROM mf_sla_state
UNION SELECT route FROM mf_checkpoint
UNION SELECT route FROM mf_failover_run
ORDER BY route
