from playground.sim.errors import CODES, KafkaError, KafkaException


def test_it_numbers_broker_errors_as_errors_java_does():
    assert CODES["PRODUCER_FENCED"] == 90
    assert CODES["INVALID_PRODUCER_EPOCH"] == 47
    assert CODES["INVALID_TXN_STATE"] == 48
    assert CODES["CONCURRENT_TRANSACTIONS"] == 51
    assert CODES["UNSTABLE_OFFSET_COMMIT"] == 88
    assert CODES["BROKER_ID_NOT_REGISTERED"] == 102


def test_it_numbers_librdkafka_local_errors_as_rdkafka_h_does():
    assert CODES["_FENCED"] == -144
    assert CODES["_STATE"] == -172
    assert CODES["_FATAL"] == -150
    assert CODES["_TIMED_OUT"] == -185
    assert CODES["_PURGE_QUEUE"] == -152


def test_it_mirrors_confluent_kafkas_error_object():
    err = KafkaError("_FENCED", "fenced by newer instance", fatal=True)
    assert err.code() == KafkaError._FENCED == -144
    assert err.name() == "_FENCED"
    assert err.str() == "fenced by newer instance"
    assert err.fatal() and not err.retriable() and not err.txn_requires_abort()
    assert KafkaError("CONCURRENT_TRANSACTIONS").retriable()
    exc = KafkaException(KafkaError("_STATE"))
    assert exc.args[0].name() == "_STATE"
