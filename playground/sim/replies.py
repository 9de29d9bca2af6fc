"""Who waits for the transaction coordinator's answer, and what they are told: the error a request's version
allows (KafkaApis, KIP-588), a partition leader's reading of the answer to the AddPartitionsToTxn it sent for a TV2
client (AddPartitionsToTxnManager), and an InitProducerId that first had to fence an ongoing transaction.

Follows core/src/main/scala/kafka/server/KafkaApis.scala (handleInitProducerIdRequest, handleEndTxnRequest,
handleAddPartitionsToTxnRequest, handleAddOffsetsToTxnRequest: their sendResponseCallback),
core/src/main/scala/kafka/server/AddPartitionsToTxnManager.scala and ReplicaManager.scala (the leader's side), and
TransactionCoordinator.handleInitProducerId (the fence).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from playground.sim.effects import Answer, Effects, Reply

# KafkaApis (core/src/main/scala/kafka/server/KafkaApis.scala, 3.9): the first request version that may be answered
# PRODUCER_FENCED (KIP-588); older versions get INVALID_PRODUCER_EPOCH instead ("For older clients, they could not
# understand the new PRODUCER_FENCED error code"): handleInitProducerIdRequest (version < 4),
# handleEndTxnRequest, handleAddPartitionsToTxnRequest, handleAddOffsetsToTxnRequest (version < 2).
PRODUCER_FENCED_SINCE = {"InitProducerId": 4, "AddPartitionsToTxn": 2, "AddOffsetsToTxn": 2, "EndTxn": 2}

# What a partition leader's AddPartitionsToTxnManager makes of the coordinator's errors: "unable to verify the
# partition has been added to the transaction", a retriable error the producer retries its batch on.
NOT_VERIFIED = frozenset(
    {
        "CONCURRENT_TRANSACTIONS",
        "COORDINATOR_LOAD_IN_PROGRESS",
        "COORDINATOR_NOT_AVAILABLE",
        "NOT_COORDINATOR",
        "NETWORK_EXCEPTION",
    }
)


def for_version(api: str, version: int | None, error: str | None) -> str | None:
    """The error code KafkaApis puts on the wire for `api` at request `version` (None: the newest)."""
    if error == "PRODUCER_FENCED" and version is not None and version < PRODUCER_FENCED_SINCE[api]:
        return "INVALID_PRODUCER_EPOCH"
    return error


@dataclass(frozen=True, slots=True)
class Waiter:
    """Who waits for the outcome of a coordinator's operation. This one: nobody (the coordinator's own aborts)."""

    def answer(self, error: str | None = None, **fields: Any) -> Effects:
        return []


NOBODY = Waiter()


@dataclass(frozen=True, slots=True)
class Requester(Waiter):
    """A client's request, answered as KafkaApis' sendResponseCallback answers its `api` at its `version`."""

    reply: Reply
    api: str
    version: int | None

    def answer(self, error: str | None = None, **fields: Any) -> Effects:
        return [Answer(self.reply, for_version(self.api, self.version, error), fields)]


@dataclass(frozen=True, slots=True)
class LeaderRequester(Waiter):
    """A partition leader's AddPartitionsToTxn (v5, verifyOnly=false) for a TV2 Produce / TxnOffsetCommit, its answer
    read as ReplicaManager / AddPartitionsToTxnManager read it: PRODUCER_FENCED becomes INVALID_PRODUCER_EPOCH
    ("producers expect to handle INVALID_PRODUCER_EPOCH in this scenario"), a pending transition or a missing
    coordinator NOT_ENOUGH_REPLICAS (NOT_VERIFIED)."""

    reply: Reply

    def answer(self, error: str | None = None, **fields: Any) -> Effects:
        if error == "PRODUCER_FENCED":
            error = "INVALID_PRODUCER_EPOCH"
        elif error in NOT_VERIFIED:
            error = "NOT_ENOUGH_REPLICAS"
        return [Answer(self.reply, error)]


@dataclass(frozen=True, slots=True)
class AfterFence(Waiter):
    """An InitProducerId that found its transactional id Ongoing: the coordinator aborts that transaction first and
    answers CONCURRENT_TRANSACTIONS once the abort is prepared (the client retries and gets the bumped epoch), or
    the error that stopped the abort."""

    requester: Requester

    def answer(self, error: str | None = None, **fields: Any) -> Effects:
        return self.requester.answer(error if error else "CONCURRENT_TRANSACTIONS")
