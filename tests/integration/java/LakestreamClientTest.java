// Apache Kafka's own Java client (kafka-clients 4.x) against a running
// Lakestream broker at $LS_TEST_BOOTSTRAP.
//
// Compiled and run offline by tests/run.sh:
//   javac -cp '.cache/java/lib/*' -d OUT tests/integration/java/LakestreamClientTest.java
//   java  -cp "OUT:.cache/java/lib/*" LakestreamClientTest
// Prints one "PASS name" / "FAIL name: why" line per test; exits 1 if any failed.

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.SubscriptionPattern;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.EndTxnResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.EndTxnRequest;
import org.apache.kafka.common.requests.EndTxnResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.ResponseHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class LakestreamClientTest {
    static final String BOOTSTRAP = System.getenv("LS_TEST_BOOTSTRAP");
    static final short RF = Short.parseShort(envOr("LS_TEST_DEFAULT_RF", "3"));
    static final int N = 1000;
    static final int PARTITIONS = 3;
    static int failed = 0;

    interface Body { void run() throws Exception; }

    static String envOr(String k, String d) {
        String v = System.getenv(k);
        return v == null || v.isEmpty() ? d : v;
    }

    // LS_JAVA_TESTS=a,b runs only the named tests (for a quick run by hand).
    static final String ONLY = System.getenv("LS_JAVA_TESTS");

    static void test(String name, Body body) {
        if (ONLY != null && !ONLY.isEmpty() && !Arrays.asList(ONLY.split(",")).contains(name)) return;
        try {
            body.run();
            System.out.println("PASS java." + name);
        } catch (Throwable t) {
            failed++;
            StringBuilder sb = new StringBuilder(t.toString());
            for (Throwable c = t.getCause(); c != null; c = c.getCause()) sb.append(" <- ").append(c);
            StackTraceElement[] st = t.getStackTrace();
            for (int i = 0; i < Math.min(4, st.length); i++) sb.append("\n    at ").append(st[i]);
            System.out.println("FAIL java." + name + ": " + sb);
        }
        System.out.flush();
    }

    static void check(boolean cond, String what) {
        if (!cond) throw new AssertionError(what);
    }

    static Properties txnProducerProps(String tid) {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        pp.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        return pp;
    }

    // One request sent by hand to the first bootstrap broker (the Java clients
    // never send a stale pair by themselves); the response body after its header.
    static ByteBuffer rawRequest(org.apache.kafka.common.requests.AbstractRequest req, ApiKeys key,
                                 short version) throws Exception {
        ByteBuffer out = req.serializeWithHeader(new RequestHeader(key, version, "raw", 7));
        String[] hp = BOOTSTRAP.split(",")[0].split(":");
        try (Socket sock = new Socket(hp[0], Integer.parseInt(hp[1]))) {
            sock.setSoTimeout(30000);
            DataOutputStream o = new DataOutputStream(sock.getOutputStream());
            byte[] b = new byte[out.remaining()];
            out.get(b);
            o.writeInt(b.length);
            o.write(b);
            o.flush();
            DataInputStream in = new DataInputStream(sock.getInputStream());
            byte[] rb = new byte[in.readInt()];
            in.readFully(rb);
            ByteBuffer bb = ByteBuffer.wrap(rb);
            ResponseHeader.parse(bb, key.responseHeaderVersion(version));
            return bb;
        }
    }

    // One transactional batch to partition 0 of topic with Produce `version`.
    static ProduceResponseData.PartitionProduceResponse rawTxnProduce(
            String topic, String tid, long pid, short epoch, int seq, short version, String value)
            throws Exception {
        MemoryRecords recs = MemoryRecords.withTransactionalRecords(
            Compression.NONE, pid, epoch, seq, new SimpleRecord(value.getBytes(StandardCharsets.UTF_8)));
        ProduceRequestData data = new ProduceRequestData().setAcks((short) -1).setTimeoutMs(30000)
            .setTransactionalId(tid)
            .setTopicData(new ProduceRequestData.TopicProduceDataCollection(List.of(
                new ProduceRequestData.TopicProduceData().setName(topic).setPartitionData(List.of(
                    new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(recs)))).iterator()));
        ByteBuffer bb = rawRequest(ProduceRequest.builder(data, true).build(version), ApiKeys.PRODUCE, version);
        ProduceResponse resp = ProduceResponse.parse(new ByteBufferAccessor(bb), version);
        return resp.data().responses().iterator().next().partitionResponses().get(0);
    }

    // EndTxn v5 (transaction version 2) by hand.
    static EndTxnResponseData rawEndTxnV5(String tid, long pid, short epoch, boolean commit)
            throws Exception {
        EndTxnRequestData d = new EndTxnRequestData().setTransactionalId(tid).setProducerId(pid)
            .setProducerEpoch(epoch).setCommitted(commit);
        ByteBuffer bb = rawRequest(new EndTxnRequest.Builder(d, true).build((short) 5), ApiKeys.END_TXN, (short) 5);
        return EndTxnResponse.parse(new ByteBufferAccessor(bb), (short) 5).data();
    }

    // Every value of the topic's partitions from the start at one isolation
    // level, reading until `want` values arrived and then until the end.
    static List<String> readAll(String topic, int partitions, String isolation, int want) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        List<String> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < partitions; p++) tps.add(new TopicPartition(topic, p));
            c.assign(tps);
            c.seekToBeginning(tps);
            long deadline = System.currentTimeMillis() + 30000;
            int empty = 0;
            while (System.currentTimeMillis() < deadline && (out.size() < want || empty < 3)) {
                int n = 0;
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(300))) {
                    out.add(new String(r.value(), StandardCharsets.UTF_8));
                    n++;
                }
                empty = n == 0 ? empty + 1 : 0;
            }
        }
        return out;
    }

    static String uniq(String prefix) {
        return prefix + "-" + UUID.randomUUID().toString().substring(0, 10);
    }

    static Admin admin() {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 30000);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60000);
        return Admin.create(p);
    }

    static KafkaProducer<byte[], byte[]> producer(String compression) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60000);
        // everything else default: enable.idempotence=true, acks=all
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<byte[], byte[]> consumer() {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);  // no group.id: assign() only
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 200);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60000);
        return new KafkaConsumer<>(p);
    }

    // A group member with the consumer's defaults but the group protocol named.
    static KafkaConsumer<byte[], byte[]> groupConsumer(String group, String protocol) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    // commitSync as an application does it during a rebalance: a commit sent with the
    // member epoch the broker has just moved past fails (STALE_MEMBER_EPOCH, surfaced as
    // CommitFailedException, as with Kafka brokers before KIP-1251); poll to learn the new
    // epoch and commit again.
    static void commitRetrying(KafkaConsumer<byte[], byte[]> c) {
        for (int attempt = 0; ; attempt++) {
            try {
                c.commitSync();
                return;
            } catch (org.apache.kafka.clients.consumer.CommitFailedException e) {
                if (attempt >= 20) throw e;
                c.poll(Duration.ofMillis(100));
            }
        }
    }

    // A consumer-protocol member with a static instance id and the range assignor.
    static KafkaConsumer<byte[], byte[]> staticConsumer(String group, String instance) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        p.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
        p.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "range");
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    // n records "<topic>-<i>", spread over the partitions round robin.
    static void produceSpread(String topic, int partitions, int n) throws Exception {
        long base = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> p = producer("none")) {
            for (int i = 0; i < n; i++)
                p.send(new ProducerRecord<>(topic, i % partitions, null, b(topic + "-" + base + "-" + i)));
            p.flush();
        }
    }

    static String createTopic(Admin admin, String prefix) throws Exception {
        String name = uniq(prefix);
        admin.createTopics(List.of(new NewTopic(name, PARTITIONS, RF))).all().get();
        long deadline = System.currentTimeMillis() + 30000;
        while (true) {
            try {
                TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames().get().get(name);
                if (d.partitions().size() == PARTITIONS) return name;
            } catch (Exception e) {
                if (System.currentTimeMillis() > deadline) throw e;
            }
            if (System.currentTimeMillis() > deadline) throw new AssertionError("topic not visible: " + name);
            Thread.sleep(50);
        }
    }

    static byte[] b(String s) { return s.getBytes(StandardCharsets.UTF_8); }

    static void roundtrip(Admin admin, String compression) throws Exception {
        String topic = createTopic(admin, "java-" + compression);
        Map<String, RecordMetadata> acked = new HashMap<>();
        List<ProducerRecord<byte[], byte[]>> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> p = producer(compression)) {
            List<Future<RecordMetadata>> futs = new ArrayList<>();
            for (int i = 0; i < N; i++) {
                List<Header> hs = List.of(new RecordHeader("seq", b(Integer.toString(i))),
                                          new RecordHeader("codec", b(compression)));
                String value = ("java " + compression + " record " + i + " ").repeat(1 + i % 9);
                ProducerRecord<byte[], byte[]> r = new ProducerRecord<>(topic, null, 1_680_000_000_000L + i,
                        b("key-" + (i % 37)), b(value), hs);
                sent.add(r);
                futs.add(p.send(r));
            }
            p.flush();
            for (int i = 0; i < N; i++) acked.put(Integer.toString(i), futs.get(i).get());
        }
        Map<Integer, Long> perPartition = new HashMap<>();
        for (RecordMetadata md : acked.values()) perPartition.merge(md.partition(), 1L, Long::sum);

        try (KafkaConsumer<byte[], byte[]> c = consumer()) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) tps.add(new TopicPartition(topic, i));
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            for (TopicPartition tp : tps) {
                check(end.get(tp).equals(perPartition.getOrDefault(tp.partition(), 0L)),
                      "endOffset " + tp + " = " + end.get(tp) + ", acked " + perPartition.get(tp.partition()));
            }
            int got = 0;
            long deadline = System.currentTimeMillis() + 60000;
            Map<Integer, Long> next = new HashMap<>();
            while (got < N) {
                check(System.currentTimeMillis() < deadline, "read " + got + " of " + N);
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    String seq = new String(r.headers().lastHeader("seq").value(), StandardCharsets.UTF_8);
                    int i = Integer.parseInt(seq);
                    ProducerRecord<byte[], byte[]> want = sent.get(i);
                    RecordMetadata md = acked.get(seq);
                    check(md.partition() == r.partition() && md.offset() == r.offset(),
                          "record " + i + " acked at " + md.partition() + "/" + md.offset()
                          + " read at " + r.partition() + "/" + r.offset());
                    long expectNext = next.getOrDefault(r.partition(), 0L);
                    check(r.offset() == expectNext, "partition " + r.partition() + " offset " + r.offset()
                          + " expected " + expectNext);
                    next.put(r.partition(), r.offset() + 1);
                    check(Arrays.equals(want.key(), r.key()), "key of record " + i);
                    check(Arrays.equals(want.value(), r.value()), "value of record " + i);
                    check(r.timestamp() == want.timestamp(), "timestamp of record " + i);
                    check(Arrays.equals(b(compression), r.headers().lastHeader("codec").value()), "header");
                    got++;
                }
            }
            check(got == N, "read " + got + " records, want " + N);
        }
    }

    public static void main(String[] args) throws Exception {
        if (BOOTSTRAP == null || BOOTSTRAP.isEmpty()) {
            System.out.println("FAIL java.setup: LS_TEST_BOOTSTRAP is not set");
            System.exit(1);
        }
        try (Admin admin = admin()) {
            test("admin_create_topic_rf3_and_describe", () -> {
                String name = createTopic(admin, "java-admin");
                TopicDescription d = admin.describeTopics(List.of(name)).allTopicNames().get().get(name);
                check(d.partitions().size() == PARTITIONS, "partitions " + d.partitions().size());
                check(d.topicId() != null && !d.topicId().equals(Uuid.ZERO_UUID), "topic id " + d.topicId());
                String cid = admin.describeCluster().clusterId().get();
                check(cid != null && !cid.isEmpty(), "cluster id");
                check(!admin.describeCluster().nodes().get().isEmpty(), "nodes");
                check(admin.listTopics().names().get().contains(name), "listTopics");
            });
            for (String codec : List.of("none", "gzip", "snappy", "lz4", "zstd")) {
                test("produce_consume_" + codec, () -> roundtrip(admin, codec));
            }
            test("offsets_for_times_and_seek", () -> {
                String topic = createTopic(admin, "java-ts");
                try (KafkaProducer<byte[], byte[]> p = producer("none")) {
                    for (int i = 0; i < 100; i++) {
                        p.send(new ProducerRecord<>(topic, 0, 1_000_000L + 10L * i, null, b("v" + i)));
                    }
                    p.flush();
                }
                try (KafkaConsumer<byte[], byte[]> c = consumer()) {
                    TopicPartition tp = new TopicPartition(topic, 0);
                    c.assign(List.of(tp));
                    Map<TopicPartition, OffsetAndTimestamp> r = c.offsetsForTimes(Map.of(tp, 1_000_000L + 10L * 42 + 1));
                    check(r.get(tp) != null && r.get(tp).offset() == 43, "offsetsForTimes " + r.get(tp));
                    check(c.beginningOffsets(List.of(tp)).get(tp) == 0L, "beginningOffsets");
                    check(c.endOffsets(List.of(tp)).get(tp) == 100L, "endOffsets");
                    c.seek(tp, 90);
                    List<String> vals = new ArrayList<>();
                    long deadline = System.currentTimeMillis() + 30000;
                    while (vals.size() < 10 && System.currentTimeMillis() < deadline) {
                        for (ConsumerRecord<byte[], byte[]> rec : c.poll(Duration.ofMillis(200))) {
                            vals.add(new String(rec.value(), StandardCharsets.UTF_8));
                        }
                    }
                    List<String> want = new ArrayList<>();
                    for (int i = 90; i < 100; i++) want.add("v" + i);
                    check(vals.equals(want), "seek(90) read " + vals);
                }
            });
            test("transactions", () -> {
                // committed records reach read_committed consumers once, aborted ones never;
                // read_uncommitted consumers see both; a second instance fences the first
                String topic = uniq("java-txn");
                admin.createTopics(List.of(new NewTopic(topic, 2, RF))).all().get();
                String tid = "java-tx-" + UUID.randomUUID();
                List<String> committed = new ArrayList<>();
                try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(txnProducerProps(tid))) {
                    p.initTransactions();
                    for (int round = 0; round < 6; round++) {
                        p.beginTransaction();
                        List<String> vals = new ArrayList<>();
                        for (int i = 0; i < 20; i++) {
                            String v = "r" + round + "-" + i;
                            vals.add(v);
                            p.send(new ProducerRecord<>(topic, i % 2, null, v.getBytes(StandardCharsets.UTF_8)));
                        }
                        if (round % 3 == 2) {
                            p.flush();
                            p.abortTransaction();
                        } else {
                            p.commitTransaction();
                            committed.addAll(vals);
                        }
                    }
                    // a new instance of the id fences this one
                    try (KafkaProducer<byte[], byte[]> p2 = new KafkaProducer<>(txnProducerProps(tid))) {
                        p2.initTransactions();
                        try {
                            p.beginTransaction();
                            p.send(new ProducerRecord<>(topic, 0, null, "zombie".getBytes(StandardCharsets.UTF_8))).get();
                            p.commitTransaction();
                            throw new AssertionError("the fenced producer committed");
                        } catch (org.apache.kafka.common.errors.ProducerFencedException
                                 | org.apache.kafka.common.errors.InvalidProducerEpochException e) {
                            // expected
                        } catch (ExecutionException e) {
                            check(e.getCause() instanceof org.apache.kafka.common.errors.ProducerFencedException
                                  || e.getCause() instanceof org.apache.kafka.common.errors.InvalidProducerEpochException,
                                  "fenced send failed with " + e.getCause());
                        }
                    }
                }
                // transaction version 2 in use: every end bumped the epoch (init: 0, six ends),
                // then the second instance's InitProducerId once more
                TransactionDescription td = admin.describeTransactions(List.of(tid)).description(tid).get();
                check(td.producerEpoch() == 7, "producer epoch " + td.producerEpoch()
                      + " after six transactions and a fencing init (transaction version 2 not in use?)");
                List<String> rc = readAll(topic, 2, "read_committed", committed.size());
                Collections.sort(rc);
                List<String> want = new ArrayList<>(committed);
                Collections.sort(want);
                check(rc.equals(want), "read_committed read " + rc.size() + " records, want " + want.size());
                List<String> ru = readAll(topic, 2, "read_uncommitted", 6 * 20);
                check(ru.size() == 6 * 20, "read_uncommitted read " + ru.size());
            });
            test("transactions_pipelined_with_default_settings", () -> {
                // The Java producer's defaults (idempotent, 5 requests in flight per
                // connection, linger 5 ms) pipeline transactional batches; the broker must
                // append a connection's requests in the order they were sent, or a later
                // batch reaches the log first and the producer dies with
                // OutOfOrderSequenceException (issue 29 item 1: 2 of 2 ProducerPerformance
                // runs with --transactional-id). Many small records, commits and aborts.
                String topic = uniq("java-txn-pipe");
                admin.createTopics(List.of(new NewTopic(topic, 4, RF))).all().get();
                List<String> committed = new ArrayList<>();
                int rounds = 40, perRound = 1000;
                byte[] pad = new byte[90];
                Arrays.fill(pad, (byte) 'x');
                try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(txnProducerProps("java-pipe-" + UUID.randomUUID()))) {
                    p.initTransactions();
                    for (int round = 0; round < rounds; round++) {
                        p.beginTransaction();
                        List<String> vals = new ArrayList<>();
                        List<Future<RecordMetadata>> fs = new ArrayList<>();
                        for (int i = 0; i < perRound; i++) {
                            String v = "p" + round + "-" + i + "-";
                            vals.add(v);
                            byte[] b = Arrays.copyOf(v.getBytes(StandardCharsets.UTF_8), v.length() + pad.length);
                            System.arraycopy(pad, 0, b, v.length(), pad.length);
                            fs.add(p.send(new ProducerRecord<>(topic, null, null, b)));
                        }
                        if (round % 5 == 4) {
                            p.abortTransaction();
                        } else {
                            p.commitTransaction();
                            for (Future<RecordMetadata> f : fs) f.get(); // all acknowledged
                            committed.addAll(vals);
                        }
                    }
                }
                List<String> rc = readAll(topic, 4, "read_committed", committed.size());
                List<String> got = new ArrayList<>();
                for (String v : rc) got.add(v.substring(0, v.lastIndexOf('-') + 1));
                Collections.sort(got);
                List<String> want = new ArrayList<>(committed);
                Collections.sort(want);
                check(got.equals(want), "read_committed read " + got.size() + " records, want "
                      + want.size() + " (each committed record once, no aborted one)");
            });
            test("transactions_v2_zombie_produce_after_commit_refused", () -> {
                // KIP-890 part 2: EndTxn bumps the epoch, so a batch of the previous epoch
                // arriving after the commit (a retry stuck in the network) is fenced, with
                // Produce v12 (which would add the partition to a new transaction) and v11
                // alike; it does not open a hanging transaction nor reach any reader. A
                // retried EndTxn of the previous epoch is answered as the first one was.
                String topic = uniq("java-zombie");
                admin.createTopics(List.of(new NewTopic(topic, 1, RF))).all().get();
                String tid = "java-zombie-" + UUID.randomUUID();
                TopicPartition tp = new TopicPartition(topic, 0);
                try (KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(txnProducerProps(tid))) {
                    p.initTransactions();
                    for (int i = 0; i < 2; i++) {
                        p.beginTransaction();
                        p.send(new ProducerRecord<>(topic, 0, null, ("c" + i).getBytes(StandardCharsets.UTF_8))).get();
                        p.commitTransaction();
                    }
                    // commitTransaction returns once the decision is durable: await its markers
                    TransactionDescription td = admin.describeTransactions(List.of(tid)).description(tid).get();
                    for (long until = System.currentTimeMillis() + 20000;
                         td.state() == TransactionState.PREPARE_COMMIT && System.currentTimeMillis() < until;
                         td = admin.describeTransactions(List.of(tid)).description(tid).get())
                        Thread.sleep(50);
                    check(td.producerEpoch() == 2 && td.state() == TransactionState.COMPLETE_COMMIT,
                          "after two commits: epoch " + td.producerEpoch() + " state " + td.state());
                    short stale = (short) (td.producerEpoch() - 1);
                    for (short v : new short[] {12, 11}) {
                        ProduceResponseData.PartitionProduceResponse r =
                            rawTxnProduce(topic, tid, td.producerId(), stale, 1, v, "zombie");
                        check(r.errorCode() == org.apache.kafka.common.protocol.Errors.INVALID_PRODUCER_EPOCH.code()
                              || r.errorCode() == org.apache.kafka.common.protocol.Errors.PRODUCER_FENCED.code(),
                              "Produce v" + v + " of the previous epoch answered " + r.errorCode()
                              + " " + r.errorMessage());
                    }
                    // the client's EndTxn of the second commit retried (lost answer): answered
                    // again with the pair it moved to, nothing changes; the other outcome refused
                    EndTxnResponseData again = rawEndTxnV5(tid, td.producerId(), stale, true);
                    check(again.errorCode() == 0 && again.producerId() == td.producerId()
                          && again.producerEpoch() == td.producerEpoch(),
                          "retried EndTxn v5 answered " + again);
                    EndTxnResponseData other = rawEndTxnV5(tid, td.producerId(), stale, false);
                    check(other.errorCode() == org.apache.kafka.common.protocol.Errors.INVALID_TXN_STATE.code(),
                          "retried EndTxn v5 with the other outcome answered " + other);
                    TransactionDescription after = admin.describeTransactions(List.of(tid)).description(tid).get();
                    check(after.state() == TransactionState.COMPLETE_COMMIT && after.producerEpoch() == 2
                          && after.topicPartitions().isEmpty(),
                          "the zombie moved the transaction: " + after.state() + " epoch " + after.producerEpoch()
                          + " " + after.topicPartitions());
                    for (ProducerState ps : admin.describeProducers(List.of(tp)).partitionResult(tp).get().activeProducers())
                        check(ps.currentTransactionStartOffset().isEmpty(),
                              "a transaction is open on the partition: " + ps);
                    // the producer itself carries on with its current epoch
                    p.beginTransaction();
                    p.send(new ProducerRecord<>(topic, 0, null, "c2".getBytes(StandardCharsets.UTF_8))).get();
                    p.commitTransaction();
                }
                List<String> rc = readAll(topic, 1, "read_committed", 3);
                check(rc.equals(List.of("c0", "c1", "c2")), "read_committed read " + rc);
                List<String> ru = readAll(topic, 1, "read_uncommitted", 3);
                check(ru.equals(List.of("c0", "c1", "c2")), "read_uncommitted read " + ru);
            });
            for (String proto : List.of("classic", "consumer"))
            test("transactions_consume_transform_produce" + (proto.equals("classic") ? "" : "_consumer_protocol"), () -> {
                // KIP-447: a group's offsets committed inside the producer's transactions;
                // every third transaction aborts and the consumer rewinds to the committed
                // offsets, so the output holds each input exactly once (with either group
                // protocol: a KIP-848 member's epoch is the generation TxnOffsetCommit checks)
                String in = uniq("java-ctp-in"), out = uniq("java-ctp-out"), group = uniq("java-ctp");
                admin.createTopics(List.of(new NewTopic(in, 2, RF), new NewTopic(out, 2, RF))).all().get();
                int n = 300;
                try (KafkaProducer<byte[], byte[]> p = producer("none")) {
                    for (int i = 0; i < n; i++)
                        p.send(new ProducerRecord<>(in, i % 2, null, ("in-" + i).getBytes(StandardCharsets.UTF_8)));
                    p.flush();
                }
                Properties cp = new Properties();
                cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, BOOTSTRAP);
                cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
                cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
                cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
                cp.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, "40");
                cp.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, proto);
                cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
                cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
                int done = 0, txns = 0;
                String ctid = "java-ctp-" + UUID.randomUUID();
                try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(cp);
                     KafkaProducer<byte[], byte[]> p = new KafkaProducer<>(txnProducerProps(ctid))) {
                    p.initTransactions();
                    c.subscribe(List.of(in));
                    long deadline = System.currentTimeMillis() + 90000;
                    while (done < n && System.currentTimeMillis() < deadline) {
                        var recs = c.poll(Duration.ofMillis(300));
                        if (recs.isEmpty()) continue;
                        p.beginTransaction();
                        Map<TopicPartition, OffsetAndMetadata> next = new HashMap<>();
                        for (ConsumerRecord<byte[], byte[]> r : recs) {
                            String v = new String(r.value(), StandardCharsets.UTF_8).replace("in-", "out-");
                            p.send(new ProducerRecord<>(out, r.partition(), null, v.getBytes(StandardCharsets.UTF_8)));
                            next.put(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1));
                        }
                        p.sendOffsetsToTransaction(next, c.groupMetadata());
                        if (++txns % 3 == 0) {
                            p.abortTransaction();
                            // back to what the group committed: the aborted ones are read again
                            Map<TopicPartition, OffsetAndMetadata> committed = c.committed(c.assignment());
                            for (TopicPartition tp : c.assignment()) {
                                OffsetAndMetadata om = committed.get(tp);
                                c.seek(tp, om == null ? 0 : om.offset());
                            }
                        } else {
                            p.commitTransaction();
                            done += recs.count();
                        }
                    }
                    check(done == n, "transformed " + done + " of " + n + " in " + txns + " transactions");
                    Map<TopicPartition, OffsetAndMetadata> committed = c.committed(
                        Set.of(new TopicPartition(in, 0), new TopicPartition(in, 1)));
                    long total = 0;
                    for (OffsetAndMetadata om : committed.values()) total += om == null ? 0 : om.offset();
                    check(total == n, "group committed " + committed);
                    // transaction version 2 in use (no AddOffsetsToTxn): every end bumped the epoch
                    TransactionDescription td = admin.describeTransactions(List.of(ctid)).description(ctid).get();
                    check(td.producerEpoch() == txns, "producer epoch " + td.producerEpoch() + " after "
                          + txns + " transactions (transaction version 2 not in use?)");
                }
                List<String> got = readAll(out, 2, "read_committed", n);
                Collections.sort(got);
                List<String> want = new ArrayList<>();
                for (int i = 0; i < n; i++) want.add("out-" + i);
                Collections.sort(want);
                check(got.equals(want), "output has " + got.size() + " records (want each of " + n + " once)");
            });
            test("consumer_protocol_group_rebalance_and_commit", () -> {
                // KIP-848 (group.protocol=consumer): two members share six partitions
                // through the server-side assignor, commit, and the survivor takes all
                String topic = uniq("java-kip848");
                admin.createTopics(List.of(new NewTopic(topic, 6, RF))).all().get();
                produceSpread(topic, 6, 600);
                String group = uniq("java-kip848-g");
                Map<String, Integer> seen = new HashMap<>();
                try (KafkaConsumer<byte[], byte[]> a = groupConsumer(group, "consumer");
                     KafkaConsumer<byte[], byte[]> b = groupConsumer(group, "consumer")) {
                    a.subscribe(List.of(topic));
                    b.subscribe(List.of(topic));
                    long deadline = System.currentTimeMillis() + 60000;
                    while (System.currentTimeMillis() < deadline
                           && (seen.size() < 600 || a.assignment().size() + b.assignment().size() != 6
                               || a.assignment().isEmpty() || b.assignment().isEmpty())) {
                        for (KafkaConsumer<byte[], byte[]> c : List.of(a, b)) {
                            for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(100)))
                                seen.merge(new String(r.value(), StandardCharsets.UTF_8), 1, Integer::sum);
                            commitRetrying(c);
                        }
                    }
                    check(seen.size() == 600, "read " + seen.size() + " distinct of 600");
                    Set<TopicPartition> both = new java.util.HashSet<>(a.assignment());
                    both.addAll(b.assignment());
                    check(both.size() == 6 && !a.assignment().isEmpty() && !b.assignment().isEmpty(),
                          "assignments " + a.assignment() + " / " + b.assignment());
                    ConsumerGroupDescription d =
                        admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get();
                    check(d.type() == GroupType.CONSUMER, "group type " + d.type());
                    check(d.members().size() == 2, "members " + d.members());
                    int described = 0;
                    for (MemberDescription m : d.members()) described += m.assignment().topicPartitions().size();
                    check(described == 6, "described assignment " + d.members());
                    b.close();
                    deadline = System.currentTimeMillis() + 60000;
                    while (System.currentTimeMillis() < deadline && a.assignment().size() != 6)
                        a.poll(Duration.ofMillis(100));
                    check(a.assignment().size() == 6, "after a member left: " + a.assignment());
                }
                Map<TopicPartition, OffsetAndMetadata> off =
                    admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
                long sum = 0;
                for (OffsetAndMetadata o : off.values()) sum += o.offset();
                check(off.size() == 6 && sum == 600, "committed " + off);
                // the group is empty now: a classic consumer may take it over and
                // resumes from the committed offsets
                produceSpread(topic, 6, 60);
                Map<String, Integer> more = new HashMap<>();
                try (KafkaConsumer<byte[], byte[]> c = groupConsumer(group, "classic")) {
                    c.subscribe(List.of(topic));
                    long deadline = System.currentTimeMillis() + 60000;
                    while (System.currentTimeMillis() < deadline && more.size() < 60)
                        for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200)))
                            more.merge(new String(r.value(), StandardCharsets.UTF_8), 1, Integer::sum);
                }
                check(more.size() == 60 && Collections.disjoint(more.keySet(), seen.keySet()),
                      "the classic consumer read " + more.size() + " records");
            });
            test("consumer_protocol_static_members_and_range", () -> {
                // group.remote.assignor=range and group.instance.id: a static member that
                // closes keeps its partitions for its session; the same instance started
                // again gets them back, and the other member's assignment never moves
                String topic = uniq("java-static");
                admin.createTopics(List.of(new NewTopic(topic, 4, RF))).all().get();
                produceSpread(topic, 4, 80);
                String group = uniq("java-static-g");
                KafkaConsumer<byte[], byte[]> a = staticConsumer(group, "inst-a");
                KafkaConsumer<byte[], byte[]> b = staticConsumer(group, "inst-b");
                Set<TopicPartition> aHad, bHad;
                try {
                    a.subscribe(List.of(topic));
                    b.subscribe(List.of(topic));
                    long deadline = System.currentTimeMillis() + 60000;
                    while (System.currentTimeMillis() < deadline
                           && (a.assignment().size() != 2 || b.assignment().size() != 2)) {
                        a.poll(Duration.ofMillis(100));
                        b.poll(Duration.ofMillis(100));
                    }
                    check(a.assignment().size() == 2 && b.assignment().size() == 2,
                          "range split " + a.assignment() + " / " + b.assignment());
                    // range: contiguous partitions per member
                    List<Integer> ap = new ArrayList<>();
                    for (TopicPartition tp : a.assignment()) ap.add(tp.partition());
                    Collections.sort(ap);
                    check(ap.get(1) - ap.get(0) == 1, "range gives contiguous partitions: " + ap);
                    aHad = new java.util.HashSet<>(a.assignment());
                    bHad = new java.util.HashSet<>(b.assignment());
                    a.close();
                    a = staticConsumer(group, "inst-a");
                    a.subscribe(List.of(topic));
                    deadline = System.currentTimeMillis() + 60000;
                    while (System.currentTimeMillis() < deadline && a.assignment().size() != 2) {
                        a.poll(Duration.ofMillis(100));
                        b.poll(Duration.ofMillis(100));
                    }
                    check(a.assignment().equals(aHad), "the static member came back to "
                          + a.assignment() + ", had " + aHad);
                    check(b.assignment().equals(bHad), "the other member moved to " + b.assignment());
                } finally {
                    a.close();
                    b.close();
                }
            });
            test("consumer_protocol_regex_subscription", () -> {
                // SubscriptionPattern (RE2/J, evaluated by the broker): topics created
                // before and after subscribing are assigned
                String prefix = uniq("java-re") + "-";
                admin.createTopics(List.of(new NewTopic(prefix + "a", 2, RF))).all().get();
                String group = uniq("java-re-g");
                try (KafkaConsumer<byte[], byte[]> c = groupConsumer(group, "consumer")) {
                    c.subscribe(new SubscriptionPattern(prefix + ".*")); // uniq: [a-z0-9-] only
                    long deadline = System.currentTimeMillis() + 60000;
                    while (System.currentTimeMillis() < deadline && c.assignment().size() != 2)
                        c.poll(Duration.ofMillis(100));
                    check(c.assignment().size() == 2, "before: " + c.assignment());
                    admin.createTopics(List.of(new NewTopic(prefix + "b", 3, RF))).all().get();
                    deadline = System.currentTimeMillis() + 60000;
                    while (System.currentTimeMillis() < deadline && c.assignment().size() != 5)
                        c.poll(Duration.ofMillis(100));
                    check(c.assignment().size() == 5, "after a matching topic appeared: " + c.assignment());
                }
            });
            test("dynamic_broker_configs_default_entity", () -> {
                // what kafka-configs --entity-type brokers --entity-default does (issue 11 §3)
                ConfigResource def = new ConfigResource(ConfigResource.Type.BROKER, "");
                admin.incrementalAlterConfigs(Map.of(def, List.of(new AlterConfigOp(
                    new ConfigEntry("log.retention.ms", "123456789"), AlterConfigOp.OpType.SET))))
                    .all().get();
                ConfigEntry e = admin.describeConfigs(List.of(def)).all().get().get(def).get("log.retention.ms");
                check(e != null && "123456789".equals(e.value())
                      && e.source() == ConfigEntry.ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
                      "described " + e);
                try {
                    admin.incrementalAlterConfigs(Map.of(def, List.of(new AlterConfigOp(
                        new ConfigEntry("num.partitions", "4"), AlterConfigOp.OpType.SET)))).all().get();
                    throw new AssertionError("num.partitions accepted as a dynamic broker config");
                } catch (ExecutionException ex) {
                    check(ex.getCause() instanceof InvalidConfigurationException
                          && ex.getCause().getMessage().contains("num.partitions"), "refusal " + ex.getCause());
                }
                admin.incrementalAlterConfigs(Map.of(def, List.of(new AlterConfigOp(
                    new ConfigEntry("log.retention.ms", ""), AlterConfigOp.OpType.DELETE)))).all().get();
                Config after = admin.describeConfigs(List.of(def)).all().get().get(def);
                check(after.get("log.retention.ms") == null, "still set after DELETE: " + after);
            });
            test("delete_topic", () -> {
                String topic = createTopic(admin, "java-del");
                admin.deleteTopics(Collections.singletonList(topic)).all().get();
                long deadline = System.currentTimeMillis() + 20000;
                while (admin.listTopics().names().get().contains(topic)) {
                    check(System.currentTimeMillis() < deadline, "deleted topic still listed");
                    Thread.sleep(50);
                }
            });
        }
        System.exit(failed == 0 ? 0 : 1);
    }
}
