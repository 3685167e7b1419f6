// Apache Kafka's Java client over TLS with a PEM truststore, as an operator
// configures it: security.protocol=SSL, ssl.truststore.type=PEM,
// ssl.truststore.location=<CA file>; hostname verification on (the client's
// default). With LS_TEST_KEYSTORE (a PEM file with key and chain) it also
// presents a client certificate (ssl.keystore.type=PEM).
//
// Compiled and run by tests/integration/test_tls.py:
//   javac -cp '.cache/java/lib/*' -d OUT tests/integration/java/tls/TlsClient.java
//   java  -cp "OUT:.cache/java/lib/*" TlsClient
// Produces 100 records to a new topic, reads them back, prints "PASS tls" or
// "FAIL tls: why" and exits 0 or 1.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Properties;
import java.util.UUID;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TlsClient {
    static Properties common() {
        Properties p = new Properties();
        p.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, System.getenv("LS_TEST_BOOTSTRAP"));
        p.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL");
        p.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        p.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, System.getenv("LS_TEST_CA"));
        String ks = System.getenv("LS_TEST_KEYSTORE");
        if (ks != null && !ks.isEmpty()) {
            p.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PEM");
            p.put(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, ks);
        }
        return p;
    }

    public static void main(String[] args) {
        String topic = "java-tls-" + UUID.randomUUID();
        int n = 100;
        try {
            Properties pp = common();
            pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            try (KafkaProducer<String, String> prod = new KafkaProducer<>(pp)) {
                for (int i = 0; i < n; i++) prod.send(new ProducerRecord<>(topic, "k" + i, "v" + i)).get();
            }
            Properties cp = common();
            cp.put(ConsumerConfig.GROUP_ID_CONFIG, "g-" + topic);
            cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            List<String> got = new ArrayList<>();
            try (KafkaConsumer<String, String> cons = new KafkaConsumer<>(cp)) {
                cons.subscribe(Collections.singletonList(topic));
                long deadline = System.currentTimeMillis() + 60000;
                while (got.size() < n && System.currentTimeMillis() < deadline)
                    for (ConsumerRecord<String, String> r : cons.poll(Duration.ofMillis(500)))
                        got.add(r.value());
            }
            for (int i = 0; i < n; i++)
                if (got.size() != n || !got.get(i).equals("v" + i))
                    throw new AssertionError("read back " + got.size() + " of " + n + " records");
            System.out.println("PASS tls");
            System.exit(0);
        } catch (Throwable t) {
            System.out.println("FAIL tls: " + t);
            System.exit(1);
        }
    }
}
