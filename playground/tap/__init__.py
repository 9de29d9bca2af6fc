"""The tap: a Kafka-protocol proxy in front of a real cluster that watches who uses which transactional.id from where
(issue 34). `wire` (what is read off the frames, and the answers rewritten so that clients keep talking through the
tap) and `observer` (what is made of it: connections, producer instances, findings) are pure; `proxy` is the asyncio
layer, `cli` its command line (`manage.py tap`).
"""
