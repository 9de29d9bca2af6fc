"""The simulated cluster served over the Kafka protocol (issue 15).

`core`: the brokers' request handling, pure and deterministic: (time, broker, connection, request) in, response
frames out, a function of those inputs and the simulator's state, so that a session can store every external request
and replay it without sockets. `apis`: one handler per API, calling into `playground.sim`. `server`: the asyncio
layer around them (a listener per simulated broker, the virtual clock following the wall clock). `control`: stopping
and starting one simulated broker from another process (KAFKA_BROKER_CONTROL).
"""
