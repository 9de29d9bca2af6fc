package incident;

import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;
import org.springframework.kafka.listener.MessageListener;

/** The downstream ledger: a read_committed consumer of the payments, in group "ledger". */
public class Ledger {

    private final ConsumerFactory<String, String> consumers;
    private KafkaMessageListenerContainer<String, String> container;
    final Set<String> confirmed = ConcurrentHashMap.newKeySet();

    public Ledger(ConsumerFactory<String, String> consumers) {
        this.consumers = consumers;
    }

    public void start(String topic) {
        ContainerProperties props = new ContainerProperties(topic);
        props.setMessageListener((MessageListener<String, String>) this::onRecord);
        container = new KafkaMessageListenerContainer<>(consumers, props);
        container.start();
    }

    private void onRecord(ConsumerRecord<String, String> record) {
        if (record.value() != null && record.value().startsWith("paid:")) {
            confirmed.add(record.key());
        }
    }

    public void stop() {
        if (container != null) {
            container.stop();
        }
    }
}
