// The Java client's half of tools/bench/kafka.py's "simulator vs real" workload: kafka-clients of the cluster's
// release runs the same transactions in-process (no worker pipe in between), and prints one JSON line with the
// wall-clock seconds of each transaction and of each commitTransaction().
//
//   java -cp 'tools/java/.build/<release>/lib/*' tools/bench/TxnBench.java BOOTSTRAP TOPIC TXID N PARTITIONS RECORDS
//
// Each transaction: beginTransaction(), RECORDS sends to each of PARTITIONS partitions, flush() (every record
// acknowledged, as confluent-kafka's flush() on the other side), commitTransaction(). Five warm-up transactions
// first (connections, the coordinator lookup, the JIT), as on the other side.
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnBench {
    public static void main(String[] args) {
        String bootstrap = args[0], topic = args[1], txid = args[2];
        int n = Integer.parseInt(args[3]), partitions = Integer.parseInt(args[4]), records = Integer.parseInt(args[5]);
        Properties props = new Properties();
        props.put("bootstrap.servers", bootstrap);
        props.put("transactional.id", txid);
        props.put("linger.ms", "5"); // as the confluent-kafka side
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
            p.initTransactions();
            run(p, topic, 5, partitions, records, null, null);
            List<Double> perTxn = new ArrayList<>(), commits = new ArrayList<>();
            run(p, topic, n, partitions, records, perTxn, commits);
            System.out.println("{\"per_txn\": " + perTxn + ", \"commits\": " + commits + "}");
        }
    }

    static void run(KafkaProducer<String, String> p, String topic, int n, int partitions, int records,
                    List<Double> perTxn, List<Double> commits) {
        for (int t = 0; t < n; t++) {
            long t0 = System.nanoTime();
            p.beginTransaction();
            for (int part = 0; part < partitions; part++) {
                for (int i = 0; i < records; i++) {
                    p.send(new ProducerRecord<>(topic, part, null, "txn" + t + "-p" + part + "-" + i));
                }
            }
            p.flush();
            long t1 = System.nanoTime();
            p.commitTransaction();
            long t2 = System.nanoTime();
            if (perTxn != null) {
                perTxn.add((t2 - t0) / 1e9);
                commits.add((t2 - t1) / 1e9);
            }
        }
    }
}
