"""One handler per API: a decoded request in, calls into the simulated cluster, the response once it answers.

Follows core/src/main/scala/kafka/server/KafkaApis.scala (3.9 and 4.x) for what each request is checked for and in
which order, and which error each version gets; the decisions themselves (a fenced epoch, a pending transition, an
unverified partition, ...) are the simulator's (playground/sim/cluster.py, coordinator.py, groups.py, log.py), which
already name the error each request version gets on the wire.

A handler describes its response once, as plain data (`messages.build` keeps the fields the request's version has).
`HANDLERS`: api key -> handler. A handler answers every version of its API that the cluster's release advertises
(exactly what that release's brokers advertise, protocol/apiversions.py); the APIs without one are not advertised.
"""

from playground.simserver.apis import configs, groups, logs, metadata, transactions  # noqa: F401  (each registers its handlers)
from playground.simserver.apis.base import HANDLERS, Handler, api

__all__ = ["HANDLERS", "Handler", "api"]
