"""The real-cluster backend: KafkaBackend (backend.py), actor worker processes (worker.py), the cluster observer
(observer.py) and a minimal Kafka protocol client for what confluent-kafka does not expose (wire.py)."""
