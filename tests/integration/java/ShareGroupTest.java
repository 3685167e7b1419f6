// Share groups (KIP-932) with Kafka's own Java share consumer (kafka-clients
// 4.4, its defaults unless a scenario says otherwise), against the broker at
// $LS_TEST_BOOTSTRAP. Run by tests/integration/test_share_groups.py, which
// compiles it, starts the broker (with a short record lock) and restarts it
// between calls:
//   java -cp OUT:.cache/java/lib/* ShareGroupTest SCENARIO TOPIC GROUP [N]
// Each scenario prints one line "RESULT <json>" the test reads, or exits 1
// with the reason.
//   read      two share consumers (implicit acknowledgement: Kafka's default)
//             read until N distinct records or 20 s with nothing new; the
//             counts per value and the group's description
//   ack       explicit acknowledgement: RELEASE the first record, REJECT the
//             second, ACCEPT the rest; the released one comes back with
//             delivery count 2, the rejected one never
//   lock      member A polls and acknowledges nothing; member B gets the same
//             records once A's locks run out (group.share.record.lock.duration.ms)
//   hold      one member (explicit acknowledgement) polls until it holds
//             records, prints "HELD <n>" and waits to be killed
//   soak      (tests/soak/soak.py: SCENARIO TOPIC GROUP SECONDS OUTFILE) sets the
//             group's share.auto.offset.reset=earliest, then two members with
//             explicit acknowledgement read for SECONDS, then until 20 s bring
//             nothing new: ACCEPT, except every 50th record RELEASEd on its
//             first delivery; every 5 s the older member closes and a new one
//             joins. Writes "<delivery count> <value>" per accepted record to
//             OUTFILE; RESULT has the counts

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.clients.admin.ShareGroupDescription;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.common.serialization.StringDeserializer;

public class ShareGroupTest {
    static final String BOOTSTRAP = System.getenv("LS_TEST_BOOTSTRAP");

    static KafkaShareConsumer<String, String> consumer(String group, boolean explicit) {
        Properties p = new Properties();
        p.put("bootstrap.servers", BOOTSTRAP);
        p.put("group.id", group);
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        if (explicit) p.put("share.acknowledgement.mode", "explicit");
        return new KafkaShareConsumer<>(p);
    }

    static void fail(String why) {
        System.out.println("FAIL " + why);
        System.exit(1);
    }

    static String q(String s) { return "\"" + s.replace("\"", "'") + "\""; }

    public static void main(String[] a) throws Exception {
        String scenario = a[0], topic = a[1], group = a[2];
        int n = a.length > 3 ? Integer.parseInt(a[3]) : 0;
        switch (scenario) {
        case "read": read(topic, group, n); break;
        case "ack": ack(topic, group); break;
        case "lock": lock(topic, group); break;
        case "soak": soak(topic, group, n, a[4]); break;
        case "hold": hold(topic, group); break;
        default: fail("unknown scenario " + scenario);
        }
    }

    static void read(String topic, String group, int n) throws Exception {
        Map<String, Integer> seen = new HashMap<>();
        String described = "";
        try (KafkaShareConsumer<String, String> c1 = consumer(group, false);
             KafkaShareConsumer<String, String> c2 = consumer(group, false)) {
            c1.subscribe(List.of(topic));
            c2.subscribe(List.of(topic));
            long quietUntil = System.currentTimeMillis() + 20000;
            while (seen.size() < n && System.currentTimeMillis() < quietUntil) {
                for (KafkaShareConsumer<String, String> c : List.of(c1, c2))
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        seen.merge(r.value(), 1, Integer::sum);
                        quietUntil = System.currentTimeMillis() + 20000;
                    }
            }
            // one more poll each: the implicit acknowledgements of the last
            // records go out with it (and close commits whatever is left)
            for (KafkaShareConsumer<String, String> c : List.of(c1, c2)) c.poll(Duration.ofMillis(200));
            try (Admin admin = Admin.create(Map.of("bootstrap.servers", BOOTSTRAP))) {
                ShareGroupDescription d =
                    admin.describeShareGroups(List.of(group)).describedGroups().get(group).get();
                described = d.groupState() + " members=" + d.members().size();
            }
        }
        StringBuilder sb = new StringBuilder("{\"described\": " + q(described) + ", \"seen\": {");
        boolean first = true;
        for (Map.Entry<String, Integer> e : seen.entrySet()) {
            sb.append(first ? "" : ", ").append(q(e.getKey())).append(": ").append(e.getValue());
            first = false;
        }
        System.out.println("RESULT " + sb.append("}}"));
    }

    static void ack(String topic, String group) throws Exception {
        String released = null, rejected = null;
        int releasedCount = 0, rejectedAgain = 0, accepted = 0;
        try (KafkaShareConsumer<String, String> c = consumer(group, true)) {
            c.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 60000;
            while (System.currentTimeMillis() < deadline) {
                ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(200));
                for (ConsumerRecord<String, String> r : rs) {
                    String v = r.value();
                    if (released == null) {
                        released = v;
                        c.acknowledge(r, AcknowledgeType.RELEASE);
                    } else if (rejected == null) {
                        rejected = v;
                        c.acknowledge(r, AcknowledgeType.REJECT);
                    } else {
                        if (v.equals(released)) releasedCount = r.deliveryCount().orElse((short) -1);
                        if (v.equals(rejected)) rejectedAgain++;
                        c.acknowledge(r, AcknowledgeType.ACCEPT);
                        accepted++;
                    }
                }
                if (!rs.isEmpty()) c.commitSync();
                if (releasedCount > 0 && System.currentTimeMillis() > deadline - 55000) break;
            }
        }
        System.out.println("RESULT {\"released_delivery_count\": " + releasedCount
                           + ", \"rejected_again\": " + rejectedAgain + ", \"accepted\": " + accepted + "}");
    }

    static void lock(String topic, String group) throws Exception {
        List<String> held = new ArrayList<>();
        int secondCount = 0;
        List<String> got = new ArrayList<>();
        try (KafkaShareConsumer<String, String> a = consumer(group, true);
             KafkaShareConsumer<String, String> b = consumer(group, true)) {
            a.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30000;
            while (held.isEmpty() && System.currentTimeMillis() < deadline)
                for (ConsumerRecord<String, String> r : a.poll(Duration.ofMillis(200))) held.add(r.value());
            if (held.isEmpty()) fail("member A got nothing in 30 s");
            // A keeps its membership (its heartbeats go on in the background)
            // but never acknowledges: once the locks run out B gets them
            b.subscribe(List.of(topic));
            deadline = System.currentTimeMillis() + 60000;
            while (got.size() < held.size() && System.currentTimeMillis() < deadline)
                for (ConsumerRecord<String, String> r : b.poll(Duration.ofMillis(200))) {
                    got.add(r.value());
                    secondCount = Math.max(secondCount, r.deliveryCount().orElse((short) -1));
                    b.acknowledge(r, AcknowledgeType.ACCEPT);
                }
            b.commitSync();
        }
        System.out.println("RESULT {\"held\": " + held.size() + ", \"got\": " + got.size()
                           + ", \"same\": " + got.containsAll(held) + ", \"delivery_count\": " + secondCount + "}");
    }

    static void hold(String topic, String group) throws Exception {
        KafkaShareConsumer<String, String> c = consumer(group, true);
        c.subscribe(List.of(topic));
        long until = System.currentTimeMillis() + 60000;
        int held = 0;
        while (held == 0 && System.currentTimeMillis() < until) held = c.poll(Duration.ofMillis(200)).count();
        if (held == 0) fail("nothing delivered in 60 s");
        System.out.println("HELD " + held);
        System.out.flush();
        Thread.sleep(600000); // killed by the test, never acknowledging
    }

    static void soak(String topic, String group, int seconds, String outFile) throws Exception {
        try (Admin admin = Admin.create(Map.of("bootstrap.servers", BOOTSTRAP))) {
            ConfigResource res = new ConfigResource(ConfigResource.Type.GROUP, group);
            AlterConfigOp op = new AlterConfigOp(new ConfigEntry("share.auto.offset.reset", "earliest"),
                                                 AlterConfigOp.OpType.SET);
            admin.incrementalAlterConfigs(Map.of(res, List.of(op))).all().get();
        }
        long released = 0, accepted = 0, polls = 0;
        int replacements = 0, maxCount = 0;
        List<KafkaShareConsumer<String, String>> members = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            members.add(consumer(group, true));
            members.get(i).subscribe(List.of(topic));
        }
        long start = System.currentTimeMillis(), lastNew = start, lastChurn = start;
        try (PrintWriter out = new PrintWriter(outFile)) {
            while (System.currentTimeMillis() - start < seconds * 1000L
                   || System.currentTimeMillis() - lastNew < 20000) {
                for (KafkaShareConsumer<String, String> c : members) {
                    long p0 = System.currentTimeMillis();
                    ConsumerRecords<String, String> rs = c.poll(Duration.ofMillis(100));
                    polls++;
                    if (System.currentTimeMillis() - p0 > 2000)
                        System.out.println("soak: at " + (p0 - start) + " ms, poll took "
                                           + (System.currentTimeMillis() - p0) + " ms");
                    for (ConsumerRecord<String, String> r : rs) {
                        int count = r.deliveryCount().orElse((short) -1);
                        maxCount = Math.max(maxCount, count);
                        if (System.currentTimeMillis() - lastNew > 5000)
                            System.out.println("soak: at " + (System.currentTimeMillis() - start) + " ms, nothing new for "
                                               + (System.currentTimeMillis() - lastNew) + " ms before offset " + r.partition() + ":" + r.offset());
                        lastNew = System.currentTimeMillis();
                        if (count == 1 && r.offset() % 50 == 7) {
                            c.acknowledge(r, AcknowledgeType.RELEASE);
                            released++;
                        } else {
                            c.acknowledge(r, AcknowledgeType.ACCEPT);
                            out.println(count + " " + r.value());
                            accepted++;
                        }
                    }
                    if (!rs.isEmpty()) {
                        long c0 = System.currentTimeMillis();
                        var res = c.commitSync();
                        if (System.currentTimeMillis() - c0 > 2000)
                            System.out.println("soak: at " + (c0 - start) + " ms, commitSync took "
                                               + (System.currentTimeMillis() - c0) + " ms: " + res);
                    }
                }
                if (System.currentTimeMillis() - lastChurn > 5000) {
                    lastChurn = System.currentTimeMillis();
                    long t0 = System.currentTimeMillis();
                    members.remove(0).close();
                    if (System.currentTimeMillis() - t0 > 2000)
                        System.out.println("soak: at " + (t0 - start) + " ms, closing a member took "
                                           + (System.currentTimeMillis() - t0) + " ms");
                    KafkaShareConsumer<String, String> c = consumer(group, true);
                    c.subscribe(List.of(topic));
                    members.add(c);
                    replacements++;
                }
            }
        }
        for (KafkaShareConsumer<String, String> c : members) c.close();
        System.out.println("RESULT {\"accepted\": " + accepted + ", \"released\": " + released
                           + ", \"replacements\": " + replacements + ", \"max_delivery_count\": "
                           + maxCount + ", \"polls\": " + polls + "}");
    }
}
