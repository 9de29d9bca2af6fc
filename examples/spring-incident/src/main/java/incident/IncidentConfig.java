package incident;

import java.util.HashMap;
import java.util.Map;

import javax.sql.DataSource;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.core.ProducerFactory;

/**
 * The application's wiring, as the incident's team had it: two producer factories, one for payments and one for the
 * monitoring component, each configured by copying the other's settings, transaction-id prefix included. Spring
 * Kafka names a transactional producer prefix + a suffix it counts from 0 per factory, so both factories' producers
 * get the transactional id "payments-tx-0": each InitProducerId fences the other's producer.
 */
@Configuration
public class IncidentConfig {

    static final String TRANSACTION_ID_PREFIX = "payments-tx-"; // the bug: the same prefix in both factories

    @Value("${bootstrap.servers}")
    String bootstrap;

    @Value("${metrics.topic}")
    String metricsTopic;

    private Map<String, Object> producerConfigs(String clientId) {
        Map<String, Object> props = new HashMap<>();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 15_000);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 15_000);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        return props;
    }

    @Bean
    public ProducerFactory<String, String> paymentProducerFactory() {
        DefaultKafkaProducerFactory<String, String> factory =
                new DefaultKafkaProducerFactory<>(producerConfigs("payment-service"));
        factory.setTransactionIdPrefix(TRANSACTION_ID_PREFIX);
        return factory;
    }

    @Bean
    public KafkaTemplate<String, String> paymentTemplate() {
        return new KafkaTemplate<>(paymentProducerFactory());
    }

    @Bean
    public ProducerFactory<String, String> monitoringProducerFactory() {
        DefaultKafkaProducerFactory<String, String> factory =
                new DefaultKafkaProducerFactory<>(producerConfigs("monitoring"));
        factory.setTransactionIdPrefix(TRANSACTION_ID_PREFIX); // copied from the payments factory
        return factory;
    }

    @Bean
    public KafkaTemplate<String, String> monitoringTemplate() {
        return new KafkaTemplate<>(monitoringProducerFactory());
    }

    @Bean
    public DefaultKafkaConsumerFactory<String, String> ledgerConsumerFactory() {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.CLIENT_ID_CONFIG, "ledger");
        props.put(ConsumerConfig.GROUP_ID_CONFIG, "ledger");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class);
        return new DefaultKafkaConsumerFactory<>(props);
    }

    @Bean
    public DataSource dataSource() {
        return new DriverManagerDataSource("jdbc:h2:mem:payments;DB_CLOSE_DELAY=-1");
    }

    @Bean
    public JdbcTemplate jdbc() {
        JdbcTemplate jdbc = new JdbcTemplate(dataSource());
        jdbc.execute("CREATE TABLE payments (order_id VARCHAR(40) PRIMARY KEY, status VARCHAR(16))");
        return jdbc;
    }

    @Bean
    public PaymentService paymentService() {
        return new PaymentService(paymentTemplate(), jdbc(), monitoring());
    }

    @Bean
    public Monitoring monitoring() {
        return new Monitoring(monitoringTemplate(), metricsTopic);
    }

    @Bean
    public Ledger ledger() {
        return new Ledger(ledgerConsumerFactory());
    }
}
