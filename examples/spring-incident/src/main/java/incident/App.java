package incident;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.core.env.MapPropertySource;

/**
 * Runs the incident and says what each side believes:
 *
 *   java -cp ... incident.App BOOTSTRAP [batches] [payments per batch] [topic] [metrics topic]
 *
 * The last line printed is one JSON object: payments marked paid in the database, sends that returned, batches whose
 * failure the payment service swallowed, metrics the monitoring component sent, and payments the read_committed
 * ledger confirmed.
 */
public final class App {

    private App() {
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args.length > 0 ? args[0] : System.getenv().getOrDefault("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092");
        int batches = args.length > 1 ? Integer.parseInt(args[1]) : 3;
        int perBatch = args.length > 2 ? Integer.parseInt(args[2]) : 5;
        String topic = args.length > 3 ? args[3] : "orders";
        String metricsTopic = args.length > 4 ? args[4] : "metrics";

        try (AnnotationConfigApplicationContext ctx = new AnnotationConfigApplicationContext()) {
            ctx.getEnvironment().getPropertySources().addFirst(new MapPropertySource(
                    "args", Map.of("bootstrap.servers", bootstrap, "metrics.topic", metricsTopic)));
            ctx.register(IncidentConfig.class);
            ctx.refresh();
            PaymentService pay = ctx.getBean(PaymentService.class);
            Monitoring monitoring = ctx.getBean(Monitoring.class);
            Ledger ledger = ctx.getBean(Ledger.class);

            ledger.start(topic);
            int order = 0;
            for (int b = 0; b < batches; b++) {
                List<String> batch = new ArrayList<>();
                for (int i = 0; i < perBatch; i++) {
                    batch.add("order-" + (++order));
                }
                pay.settle(topic, batch);
            }
            long deadline = System.currentTimeMillis() + Long.getLong("ledger.wait.ms", 10_000);
            while (ledger.confirmed.size() < pay.sendsReturned.get() && System.currentTimeMillis() < deadline) {
                Thread.sleep(100); // the ledger reads what was committed (what never will be, it waits for in vain)
            }
            ledger.stop();
            System.out.printf(
                    "{\"paid_in_database\": %d, \"sends_returned\": %d, \"batches_failed\": %d, "
                            + "\"metrics\": %d, \"ledger_confirmed\": %d}%n",
                    pay.paidInDatabase(), pay.sendsReturned.get(), pay.failuresSwallowed.get(),
                    monitoring.metrics.get(), ledger.confirmed.size());
        }
    }
}
