-- The log ends the latest checkpoint run read beside each checkpoint (mf_checkpoint, migration 0016): the group's
-- lag on the source (source_end - source_offset) and on the target if it moved now (target_end - target_offset).
SELECT group_id, topic, partition, source_end, target_end
FROM mf_checkpoint
WHERE route = :route
LIMIT :limit
