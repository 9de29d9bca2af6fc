"""What the brokers of each Kafka release advertise in ApiVersions, read off real brokers of
3.5 (3.5.2), 3.9 (3.9.1), 4 (4.4.0) by tools/kafka/apiversions.py (generated: run it again rather than editing this file).
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Final

# fmt: off
# api key -> (lowest, highest) version
API_KEYS: Final = MappingProxyType(
    {
        "3.5": MappingProxyType(
            {
                0: (0, 9), 1: (0, 15), 2: (0, 8), 3: (0, 12), 8: (0, 8), 9: (0, 8), 10: (0, 4), 11: (0, 9),
                12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 4), 17: (0, 1), 18: (0, 3), 19: (0, 7),
                20: (0, 6), 21: (0, 2), 22: (0, 4), 23: (0, 4), 24: (0, 3), 25: (0, 3), 26: (0, 3), 27: (0, 1),
                28: (0, 3), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
                36: (0, 2), 37: (0, 3), 42: (0, 2), 43: (0, 2), 44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0),
                48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0), 55: (0, 1), 57: (0, 1), 60: (0, 0), 61: (0, 0),
                64: (0, 0), 65: (0, 0), 66: (0, 0),
            }
        ),
        "3.9": MappingProxyType(
            {
                0: (0, 11), 1: (0, 17), 2: (0, 9), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 6), 11: (0, 9),
                12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 4), 19: (0, 7),
                20: (0, 6), 21: (0, 2), 22: (0, 5), 23: (0, 4), 24: (0, 5), 25: (0, 4), 26: (0, 4), 27: (0, 1),
                28: (0, 4), 29: (0, 3), 30: (0, 3), 31: (0, 3), 32: (0, 4), 33: (0, 2), 34: (0, 2), 35: (0, 4),
                36: (0, 2), 37: (0, 3), 38: (0, 3), 39: (0, 2), 40: (0, 2), 41: (0, 3), 42: (0, 2), 43: (0, 2),
                44: (0, 1), 45: (0, 0), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
                55: (0, 2), 57: (0, 1), 60: (0, 1), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 1), 68: (0, 0),
                69: (0, 0), 74: (0, 0), 75: (0, 0), 80: (0, 0), 81: (0, 0),
            }
        ),
        "4": MappingProxyType(
            {
                0: (0, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9),
                12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6), 16: (0, 5), 17: (0, 1), 18: (0, 5), 19: (2, 7),
                20: (1, 6), 21: (0, 2), 22: (0, 5), 23: (2, 4), 24: (0, 5), 25: (0, 4), 26: (0, 5), 27: (1, 2),
                28: (0, 6), 29: (1, 3), 30: (1, 3), 31: (1, 3), 32: (1, 4), 33: (0, 2), 34: (1, 2), 35: (1, 5),
                36: (0, 2), 37: (0, 3), 38: (1, 3), 39: (1, 2), 40: (1, 2), 41: (1, 3), 42: (0, 3), 43: (0, 2),
                44: (0, 1), 45: (0, 1), 46: (0, 0), 47: (0, 0), 48: (0, 1), 49: (0, 1), 50: (0, 0), 51: (0, 0),
                55: (0, 2), 57: (0, 2), 60: (0, 2), 61: (0, 0), 64: (0, 0), 65: (0, 0), 66: (0, 2), 68: (0, 1),
                69: (0, 1), 74: (0, 1), 75: (0, 0), 76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 80: (0, 1),
                81: (0, 0), 83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1), 88: (0, 1), 89: (0, 1),
                90: (0, 1), 91: (0, 0), 92: (0, 0), 93: (0, 0), 94: (0, 0),
            }
        ),
    }
)
# feature -> (lowest, highest) level the broker's software supports (v3 leaves out those whose lowest is 0)
SUPPORTED_FEATURES: Final = MappingProxyType(
    {
        "3.5": MappingProxyType(
            {
                "metadata.version": (1, 11),
            }
        ),
        "3.9": MappingProxyType(
            {
                "kraft.version": (0, 1), "metadata.version": (1, 21),
            }
        ),
        "4": MappingProxyType(
            {
                "eligible.leader.replicas.version": (0, 1), "group.version": (0, 1), "kraft.version": (0, 1),
                "metadata.version": (7, 33), "share.version": (0, 2), "streams.version": (0, 1),
                "transaction.version": (0, 2),
            }
        ),
    }
)
# feature -> (lowest, highest) level finalized for the cluster
FINALIZED_FEATURES: Final = MappingProxyType(
    {
        "3.5": MappingProxyType(
            {
                "metadata.version": (11, 11),
            }
        ),
        "3.9": MappingProxyType(
            {
                "metadata.version": (21, 21),
            }
        ),
        "4": MappingProxyType(
            {
                "eligible.leader.replicas.version": (1, 1), "group.version": (1, 1), "metadata.version": (33, 33),
                "share.version": (2, 2), "streams.version": (1, 1), "transaction.version": (2, 2),
            }
        ),
    }
)
# fmt: on
