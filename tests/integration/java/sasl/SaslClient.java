// Apache Kafka's Java client (kafka-clients in .cache/java/lib) over
// SASL_PLAINTEXT with one SCRAM or PLAIN login, every other setting at its
// default: produces COUNT records to a new topic and reads them back, then
// prints "OK n". With a wrong password it prints "AUTH <exception>: <message>"
// (the exception the client raises). Compiled and run by test_sasl.py:
//   java SaslClient BOOTSTRAP MECHANISM USER PASSWORD TOPIC COUNT

import java.time.Duration;
import java.util.Collections;
import java.util.Properties;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class SaslClient {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], mech = args[1], user = args[2], pw = args[3], topic = args[4];
        int count = Integer.parseInt(args[5]);
        String module = mech.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                                             : "org.apache.kafka.common.security.scram.ScramLoginModule";
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", mech);
        p.put("sasl.jaas.config", module + " required username=\"" + user + "\" password=\"" + pw + "\";");
        Properties pp = new Properties();
        pp.putAll(p);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        pp.put("max.block.ms", "20000");
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(pp)) {
            for (int i = 0; i < count; i++) prod.send(new ProducerRecord<>(topic, "v" + i)).get();
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof SaslAuthenticationException) {
                System.out.println("AUTH " + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
                return;
            }
            throw e;
        } catch (SaslAuthenticationException e) {
            System.out.println("AUTH " + e.getClass().getSimpleName() + ": " + e.getMessage());
            return;
        }
        Properties cp = new Properties();
        cp.putAll(p);
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        cp.put("group.id", "sasl-" + topic);
        cp.put("auto.offset.reset", "earliest");
        int seen = 0;
        try (KafkaConsumer<String, String> cons = new KafkaConsumer<>(cp)) {
            cons.subscribe(Collections.singletonList(topic));
            long deadline = System.currentTimeMillis() + 60000;
            while (seen < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : cons.poll(Duration.ofMillis(500))) {
                    if (!r.value().equals("v" + seen)) throw new IllegalStateException("out of order: " + r.value());
                    seen++;
                }
            }
        }
        System.out.println("OK " + seen);
    }
}
