-- The route's latest checkpoints: one row per group and source partition, newest first.
SELECT group_id, topic, partition, source_offset, target_topic, target_offset, status,
       max_repeats, checkpointed_at
FROM mf_checkpoint
WHERE route = :route
ORDER BY checkpointed_at DESC, group_id, topic, partition
LIMIT :limit
