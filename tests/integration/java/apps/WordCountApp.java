// A Kafka Streams word count (Kafka Streams 4.x) for
// tests/integration/test_connect_streams.py: its KTable lives in a local
// RocksDB store backed by a compacted changelog topic on the broker.
//
//   java -cp "OUT:.cache/java/apps/*" WordCountApp BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR CHANGELOG_RETENTION_MS [GUARANTEE [PROTOCOL [THREADS]]]
//
// GUARANTEE is processing.guarantee (at_least_once by default, or
// exactly_once_v2: transactions, read_committed everywhere). PROTOCOL is
// group.protocol: classic (default) or streams (KIP-1071: the broker
// assigns the tasks and creates the internal topics). THREADS is
// num.stream.threads (1 by default).
// Reads lines from INPUT, counts their words in the store "word-counts"
// (changelog APP_ID-word-counts-changelog: cleanup.policy=compact, as Streams
// creates it, plus retention.ms=CHANGELOG_RETENTION_MS) and writes each new
// count to OUTPUT (key: word, value: 8-byte big-endian long).
//
// Prints one line per event on stdout for the test to follow:
//   STATE <new state>                         each KafkaStreams state change
//   RESTORED <topic>-<partition> <records>    a store partition restored from its changelog
//   CLOSED <final state>                      after close()
// Runs until stdin reaches EOF (or reads "stop"), then closes cleanly and
// exits 0; exits 2 if Streams went to ERROR or did not close in time.

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.utils.Bytes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.KeyValueStore;

public class WordCountApp {
    static synchronized void say(String line) {
        System.out.println(line);
        System.out.flush();
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 6 || args.length > 9) {
            System.err.println("usage: WordCountApp BOOTSTRAP APP_ID INPUT OUTPUT STATE_DIR CHANGELOG_RETENTION_MS [GUARANTEE [PROTOCOL [THREADS]]]");
            System.exit(64);
        }
        String protocol = args.length >= 8 ? args[7] : "classic";
        int threads = args.length >= 9 ? Integer.parseInt(args[8]) : 1;
        String bootstrap = args[0], appId = args[1], input = args[2], output = args[3];
        String stateDir = args[4], retentionMs = args[5];

        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, appId);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.STATE_DIR_CONFIG, stateDir);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 200);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, args.length >= 7 ? args[6] : "at_least_once");
        // every update goes to the output topic and the changelog at once
        p.put(StreamsConfig.STATESTORE_CACHE_MAX_BYTES_CONFIG, 0);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, threads);
        p.put(StreamsConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        // what Kafka 5.0 will default to (and warns about until then)
        p.put("processing.exception.handler.global.enabled", true);
        if (protocol.equals("classic")) {
            // a quick group: one member, no waiting for others (with the
            // streams protocol the broker sets both)
            p.put(StreamsConfig.consumerPrefix("session.timeout.ms"), 10000);
            p.put(StreamsConfig.consumerPrefix("heartbeat.interval.ms"), 1000);
        }

        Map<String, String> changelog = new HashMap<>();
        changelog.put("retention.ms", retentionMs);

        StreamsBuilder b = new StreamsBuilder();
        b.stream(input, Consumed.with(Serdes.String(), Serdes.String()))
            .flatMapValues(line -> Arrays.asList(line.toLowerCase(Locale.ROOT).split("\\W+")))
            .filter((k, word) -> !word.isEmpty())
            .groupBy((k, word) -> word, Grouped.with("words", Serdes.String(), Serdes.String()))
            .count(Materialized.<String, Long, KeyValueStore<Bytes, byte[]>>as("word-counts")
                       .withKeySerde(Serdes.String())
                       .withValueSerde(Serdes.Long())
                       .withLoggingEnabled(changelog))
            .toStream()
            .to(output, Produced.with(Serdes.String(), Serdes.Long()));

        KafkaStreams streams = new KafkaStreams(b.build(), p);
        Object stopped = new Object();
        boolean[] failed = {false};
        streams.setStateListener((now, before) -> {
            say("STATE " + now);
            if (now == KafkaStreams.State.ERROR) {
                synchronized (stopped) {
                    failed[0] = true;
                    stopped.notifyAll();
                }
            }
        });
        streams.setGlobalStateRestoreListener(new StateRestoreListener() {
            @Override
            public void onRestoreStart(TopicPartition tp, String store, long start, long end) {
                say("RESTORING " + tp + " " + start + ".." + end);
            }

            @Override
            public void onBatchRestored(TopicPartition tp, String store, long batchEnd, long n) {
            }

            @Override
            public void onRestoreEnd(TopicPartition tp, String store, long total) {
                say("RESTORED " + tp + " " + total);
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            say("EXCEPTION " + e);
            e.printStackTrace();
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        streams.start();

        // stdin EOF or "stop": close
        Thread reader = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(
                     new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null && !line.trim().equals("stop")) {
                }
            } catch (Exception e) {
                say("EXCEPTION stdin " + e);
            }
            synchronized (stopped) {
                stopped.notifyAll();
            }
        }, "stdin-reader");
        reader.setDaemon(true);
        reader.start();

        synchronized (stopped) {
            while (reader.isAlive() && !failed[0]) stopped.wait(200);
        }
        boolean closed = streams.close(Duration.ofSeconds(30));
        say("CLOSED " + streams.state());
        System.exit(closed && !failed[0] ? 0 : 2);
    }
}
