"""The embedded simulated Kafka cluster: deterministic, sans-I/O, in virtual time.

Entry points: `playground.sim.driver.SimBackend` (the Backend the scenario runner and the web layer use),
`playground.sim.cluster.Cluster` with `playground.sim.client.Producer` / `Consumer` for direct use.
"""
