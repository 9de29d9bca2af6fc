"""The Kafka protocol, pure: size-prefixed frames, request and response headers, message bodies (kio's dataclasses,
generated from Kafka's own JSON schemas), record batches v2 with their checksum and compression codecs, error codes
by Kafka's names, the ApiVersions tables real releases advertise, and `__transaction_state`'s record encoding.

No sockets, no clock, no threads: bytes in, values out, and back. `playground.simserver` serves the simulated cluster
with it; anything that speaks to a Kafka (a test, the real backend's raw client) may use it too.
"""
