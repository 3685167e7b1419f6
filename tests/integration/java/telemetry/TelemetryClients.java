// Apache Kafka's Java producer and consumer with their default settings
// (enable.metrics.push is true by default: KIP-714 client telemetry), for
// test_client_telemetry.py:
//   java TelemetryClients BOOTSTRAP TOPIC
// Produces a record and polls the consumer in a loop; prints
// "PRODUCER <client instance id>" and "CONSUMER <client instance id>" once
// each client has had its id from GetTelemetrySubscriptions, and keeps
// running until its standard input closes; then closes both clients (their
// last, terminating push) and prints "CLOSED".

import java.time.Duration;
import java.util.Collections;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class TelemetryClients {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        AtomicBoolean stop = new AtomicBoolean();
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) { }
            } catch (java.io.IOException e) { }
            stop.set(true);
        });
        stdin.setDaemon(true);
        stdin.start();
        Properties pp = new Properties();
        pp.put("bootstrap.servers", bootstrap);
        pp.put("key.serializer", StringSerializer.class.getName());
        pp.put("value.serializer", StringSerializer.class.getName());
        Properties cp = new Properties();
        cp.put("bootstrap.servers", bootstrap);
        cp.put("key.deserializer", StringDeserializer.class.getName());
        cp.put("value.deserializer", StringDeserializer.class.getName());
        cp.put("group.id", "telemetry-" + topic);
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(pp);
             KafkaConsumer<String, String> cons = new KafkaConsumer<>(cp)) {
            cons.subscribe(Collections.singletonList(topic));
            Uuid prodId = null, consId = null;
            int i = 0;
            while (!stop.get()) {
                prod.send(new ProducerRecord<>(topic, "v" + i++));
                cons.poll(Duration.ofMillis(200));
                if (prodId == null) {
                    prodId = instanceId(() -> prod.clientInstanceId(Duration.ofMillis(100)));
                    if (prodId != null) System.out.println("PRODUCER " + prodId);
                }
                if (consId == null) {
                    consId = instanceId(() -> cons.clientInstanceId(Duration.ofMillis(100)));
                    if (consId != null) System.out.println("CONSUMER " + consId);
                }
                System.out.flush();
            }
        }
        System.out.println("CLOSED");
        System.out.flush();
    }

    interface IdCall {
        Uuid get();
    }

    // The id once the client has it; null while it waits for it.
    static Uuid instanceId(IdCall call) {
        try {
            return call.get();
        } catch (TimeoutException e) {
            return null;
        }
    }
}
