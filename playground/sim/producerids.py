"""Producer ids: each broker hands them out from a block of 1000 that the controller gave it, and a block not used up
is lost when the broker stops (core/src/main/scala/kafka/coordinator/transaction/ProducerIdManager.scala,
server-common/src/main/java/org/apache/kafka/server/common/ProducerIdsBlock.java)."""

from __future__ import annotations

PRODUCER_ID_BLOCK_SIZE = 1000  # ProducerIdsBlock.PRODUCER_ID_BLOCK_SIZE


class ProducerIdManager:
    """The controller's next block and each broker's current one (next id, end)."""

    __slots__ = ("_blocks", "_next_block")

    def __init__(self) -> None:
        self._next_block = 0
        self._blocks: dict[int, tuple[int, int]] = {}

    def generate(self, broker: int) -> int:
        next_id, end = self._blocks.get(broker, (0, 0))
        if next_id >= end:
            next_id, end = self._next_block, self._next_block + PRODUCER_ID_BLOCK_SIZE
            self._next_block += PRODUCER_ID_BLOCK_SIZE
        self._blocks[broker] = (next_id + 1, end)
        return next_id

    def broker_stopped(self, broker: int) -> None:
        self._blocks.pop(broker, None)  # an unused id block is lost with the process, as in Kafka
