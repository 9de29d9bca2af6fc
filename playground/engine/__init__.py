"""What both engines share and nothing more: the interface a backend implements (`backend`), the typed events both
emit (`events`), and what a scenario declares, as plain frozen data (`spec`).

The simulator (`playground.sim`) and the real-cluster adapter (`playground.kafka`) import this package and nothing
above it; this package imports neither of them. Who chooses an engine builds it with
`playground.scenario.engines.make_backend`. Pure: no Django, no I/O (the import contracts in pyproject.toml)."""
