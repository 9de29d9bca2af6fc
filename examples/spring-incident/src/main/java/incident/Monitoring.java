package incident;

import java.util.concurrent.atomic.AtomicInteger;

import org.springframework.kafka.core.KafkaTemplate;

/**
 * The monitoring component: a metric record for every payment taken, in a transaction of its own producer factory
 * (the one whose settings were copied from the payments factory, transaction-id prefix included). The first one
 * makes its producer, whose InitProducerId takes the transactional id "payments-tx-0" from the payment service's
 * producer, in the middle of the payment service's transaction.
 */
public class Monitoring {

    private final KafkaTemplate<String, String> kafka;
    private final String topic;
    final AtomicInteger metrics = new AtomicInteger();
    final AtomicInteger failures = new AtomicInteger();

    public Monitoring(KafkaTemplate<String, String> kafka, String topic) {
        this.kafka = kafka;
        this.topic = topic;
    }

    public void paymentTaken(String orderId) {
        try {
            kafka.executeInTransaction(t -> t.send(topic, "payments", "taken:" + orderId));
            metrics.incrementAndGet();
        } catch (RuntimeException e) {
            failures.incrementAndGet();
        }
    }
}
