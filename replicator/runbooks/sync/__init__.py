"""Keep a route's target in step with its source: topics, partitions, configs, ACLs."""
