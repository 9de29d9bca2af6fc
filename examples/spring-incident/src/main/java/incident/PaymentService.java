package incident;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.kafka.core.KafkaTemplate;

/**
 * Settles payments in batches, one Kafka transaction per batch. For each payment: the send to Kafka (its future is
 * not awaited), then the payment marked paid in the database (its own transaction, committed at once: outside the
 * Kafka transaction), then the monitoring component told. A failure is logged at debug and forgotten: the database
 * already says paid, and every dashboard reads the database.
 */
public class PaymentService {

    private static final Logger log = LoggerFactory.getLogger(PaymentService.class);

    private final KafkaTemplate<String, String> kafka;
    private final JdbcTemplate jdbc;
    private final Monitoring monitoring;
    final AtomicInteger sendsReturned = new AtomicInteger();
    final AtomicInteger failuresSwallowed = new AtomicInteger();

    public PaymentService(KafkaTemplate<String, String> kafka, JdbcTemplate jdbc, Monitoring monitoring) {
        this.kafka = kafka;
        this.jdbc = jdbc;
        this.monitoring = monitoring;
    }

    public void settle(String topic, List<String> orders) {
        try {
            kafka.executeInTransaction(t -> {
                for (String orderId : orders) {
                    t.send(topic, orderId, "paid:" + orderId); // not awaited
                    sendsReturned.incrementAndGet();
                    jdbc.update("INSERT INTO payments (order_id, status) VALUES (?, 'PAID')", orderId);
                    monitoring.paymentTaken(orderId);
                }
                return null;
            });
        } catch (RuntimeException e) {
            failuresSwallowed.incrementAndGet();
            log.debug("batch {}: {}", orders, e.toString());
        }
    }

    public int paidInDatabase() {
        Integer n = jdbc.queryForObject("SELECT COUNT(*) FROM payments WHERE status = 'PAID'", Integer.class);
        return n == null ? 0 : n;
    }
}
