"""The fleet: audit and plan many clusters at once on Spark (extra `kreplica[fleet]`).

Pure parts (standard library only, no Spark): `policy` (the policy file), `adapter` (one
cluster's plan through the planner), `records` (snapshot text -> what Spark reads), `synth`
(synthetic fleets), `collect` (snapshots of the config file's clusters), `report` (summaries;
charts import matplotlib). Spark parts: `frames`, `transforms`, `pipeline`, and `job`, the entry
point and the only place a SparkSession is built. Nothing here is imported by the CLI until a
`kreplica fleet` command runs.
"""
