"""The hot path: a long-running worker per route (``mirrorflow run``).

A route's worker is one class built in layers, each in a module of its own (base first):

- ``group_member.GroupMember``: joining the group, renewing the consumer, rebalances, handing over;
- ``placing.Placing``: positioning each assigned partition before it fetches;
- ``watches.Watches``: the watches the loop runs (stuck, withheld, outage, lag);
- ``client_events.ClientEvents``: delivery reports, client errors, commits;
- ``held_apart.HeldApart``: partitions the target acknowledges nothing of, held apart so the others go on;
- ``route_worker.RouteWorker``: the copy loop of an at-least-once route;
- ``target_member.TargetMember``: ownership given by the positions group on the target;
- ``transaction_producer.TransactionProducer``: the transactional producer's life;
- ``exactly_once.ExactlyOnceWorker``: transactions, positions, aborts.

How long each waits: ``timeouts.WorkerTimeouts``.
"""
