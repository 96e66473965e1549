"""Executing plans: the only layer of kreplica that writes to a cluster.

It applies reassignment plans through KIP-455 AlterPartitionReassignments or the legacy
`/admin/reassign_partitions` znode, sets and restores replication throttles, runs moves in
waves, journals every step so an interrupted apply can resume, and verifies or cancels.

The building blocks are pure (standard library only, deterministic) and have no I/O except the
journal's own file: `moves` (what one partition changes), `throttles` (Kafka's throttle
calculation and merging with values already set), `waves` (which moves run together) and
`journal` (the append-only record of an apply). The backends that talk to Kafka or ZooKeeper
live in their own modules and are imported only by the code that needs them: importing this
package imports nothing.
"""
