// Java client peer for the e2e benchmark's consume workloads (contract:
// bench/peers/README.md): Kafka's own KafkaConsumer, assign + seekToBeginning, or
// subscribe in a group with --members M consumers (one thread each) that commit what
// they consumed when partitions are revoked from them and at the end. Kafka's
// ConsumerPerformance cannot assign and runs one consumer only; this fills that gap.
// Compiled by the e2e runner with javac against the rig's Kafka jars and run through
// `tests/broker/rig tool` with the same JVM flags as Kafka's perf tools. Prints one
// JSON result line on stdout; diagnostics go to stderr.

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RebalanceInProgressException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.utils.AppInfoParser;

public final class ConsumePeer {
    private static final Duration POLL = Duration.ofMillis(100);
    private static final Duration COMMIT = Duration.ofSeconds(30);

    private ConsumePeer() {}

    /** Parsed `--key value` pairs and the `--set key=value` list. */
    private static final class Args {
        final Map<String, String> kv = new TreeMap<>();
        final List<String[]> set = new ArrayList<>();

        String str(String k, String def) {
            String v = kv.get(k);
            if (v == null && def == null) {
                throw new IllegalArgumentException("--" + k + " is required");
            }
            return v == null ? def : v;
        }

        long num(String k, Long def) {
            String v = kv.get(k);
            if (v == null) {
                if (def == null) {
                    throw new IllegalArgumentException("--" + k + " is required");
                }
                return def;
            }
            return Long.parseLong(v);
        }
    }

    /** What the members share: the stop condition and the idle clock. */
    private static final class Shared {
        final long want;
        final long start = System.nanoTime();
        final AtomicLong total = new AtomicLong();
        final AtomicLong lastSeen = new AtomicLong(System.nanoTime());

        Shared(long want) {
            this.want = want;
        }
    }

    /** One consumer of the run and what it read. */
    private static final class Member implements Runnable {
        final KafkaConsumer<byte[], byte[]> consumer;
        final Shared shared;
        final boolean group;
        final long valueBytes;
        final long idleNanos;
        final CyclicBarrier done;
        /** Per partition: runs of consecutive offsets read, as {first, last}. */
        final Map<Integer, List<long[]>> runs = new TreeMap<>();
        long count;
        long bytes;
        long errors;
        long bad;
        long firstNanos = -1;
        long lastNanos = -1;
        String error = "";

        Member(KafkaConsumer<byte[], byte[]> consumer, Shared shared, boolean group,
               long valueBytes, long idleNanos, CyclicBarrier done) {
            this.consumer = consumer;
            this.shared = shared;
            this.group = group;
            this.valueBytes = valueBytes;
            this.idleNanos = idleNanos;
            this.done = done;
        }

        void fail(String what) {
            errors++;
            if (error.isEmpty()) {
                error = what;
            }
        }

        void take(ConsumerRecords<byte[], byte[]> records) {
            if (records.isEmpty()) {
                return;
            }
            long now = System.nanoTime();
            if (firstNanos < 0) {
                firstNanos = now;
            }
            lastNanos = now;
            shared.lastSeen.set(now);
            for (TopicPartition tp : records.partitions()) {
                List<long[]> list = runs.computeIfAbsent(tp.partition(), p -> new ArrayList<>());
                long[] run = list.isEmpty() ? null : list.get(list.size() - 1);
                for (ConsumerRecord<byte[], byte[]> r : records.records(tp)) {
                    long off = r.offset();
                    if (run != null && off == run[1] + 1) {
                        run[1] = off;
                    } else {
                        run = new long[] {off, off};
                        list.add(run);
                    }
                    int len = r.value() == null ? 0 : r.value().length;
                    bytes += len;
                    if (valueBytes > 0 && len != valueBytes) {
                        bad++;
                    }
                    count++;
                }
            }
            shared.total.addAndGet(records.count());
        }

        @Override
        public void run() {
            try {
                while (shared.total.get() < shared.want) {
                    ConsumerRecords<byte[], byte[]> records;
                    try {
                        records = consumer.poll(POLL);
                    } catch (RuntimeException e) {
                        fail("poll: " + e);
                        if (errors > 1000) {
                            break;
                        }
                        continue;
                    }
                    take(records);
                    if (records.isEmpty()
                            && System.nanoTime() - shared.lastSeen.get() > idleNanos) {
                        fail("no record for " + idleNanos / 1_000_000_000L + " s after "
                                + shared.total.get() + " records");
                        break;
                    }
                }
                if (group) {
                    commitAtEnd();
                }
            } finally {
                try {
                    // Every member has committed before any leaves (a leave would start a
                    // rebalance under the others' final commits).
                    done.await();
                } catch (Exception e) {
                    fail("barrier: " + e);
                }
                try {
                    consumer.close();
                } catch (RuntimeException e) {
                    fail("close: " + e);
                }
            }
        }

        /** Commits what was consumed; a rebalance in progress is finished by polling. */
        void commitAtEnd() {
            long deadline = System.nanoTime() + COMMIT.toNanos();
            while (true) {
                try {
                    consumer.commitSync(COMMIT);
                    return;
                } catch (RebalanceInProgressException e) {
                    if (System.nanoTime() > deadline) {
                        fail("commit: " + e);
                        return;
                    }
                    // Records a poll hands out now are counted: they would be duplicates.
                    take(consumer.poll(POLL));
                } catch (RuntimeException e) {
                    fail("commit: " + e);
                    return;
                }
            }
        }
    }

    /** Commits the revoked partitions' consumed offsets before they move. */
    private static final class CommitOnRevoke implements ConsumerRebalanceListener {
        Member member;

        @Override
        public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
            if (partitions.isEmpty()) {
                return;
            }
            try {
                member.consumer.commitSync(COMMIT);
            } catch (RuntimeException e) {
                member.fail("commit on revoke: " + e);
            }
        }

        @Override
        public void onPartitionsAssigned(Collection<TopicPartition> partitions) {}

        @Override
        public void onPartitionsLost(Collection<TopicPartition> partitions) {
            if (!partitions.isEmpty()) {
                member.fail("partitions lost: " + partitions);
            }
        }
    }

    private static String version() {
        return "java: Kafka " + AppInfoParser.getVersion() + " KafkaConsumer (ConsumePeer) on Java "
                + System.getProperty("java.version");
    }

    private static String json(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20 || c == 0x7f) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }

    private static String consume(Args a) throws Exception {
        String topic = a.str("topic", null);
        long n = a.num("records", null);
        int partitions = (int) a.num("partitions", null);
        long valueBytes = a.num("value-bytes", 0L);
        long idleNanos = a.num("idle-timeout-s", 30L) * 1_000_000_000L;
        String group = a.kv.get("group");
        int members = (int) a.num("members", 1L);
        if (members < 1 || (group == null && members != 1)) {
            throw new IllegalArgumentException("--members needs --group and must be >= 1");
        }
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, a.str("bootstrap", null));
        props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, a.str("isolation", "read_uncommitted"));
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        // The same fetch settings as the other peers (Java's defaults, spelled out).
        props.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, "1");
        props.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "500");
        props.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, "1048576");
        props.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, "52428800");
        if (group != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        for (String[] kv : a.set) {
            props.put(kv[0], kv[1]);
        }

        List<KafkaConsumer<byte[], byte[]>> consumers = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            Properties p = (Properties) props.clone();
            p.put(ConsumerConfig.CLIENT_ID_CONFIG, "e2e-java-" + i);
            consumers.add(new KafkaConsumer<>(p));
        }
        // The timed window starts here, after the clients exist (as ConsumerPerformance's).
        Shared shared = new Shared(n);
        CyclicBarrier done = new CyclicBarrier(members);
        List<Member> all = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < members; i++) {
            KafkaConsumer<byte[], byte[]> c = consumers.get(i);
            Member m = new Member(c, shared, group != null, valueBytes, idleNanos, done);
            all.add(m);
            if (group != null) {
                CommitOnRevoke l = new CommitOnRevoke();
                l.member = m;
                c.subscribe(List.of(topic), l);
            } else {
                List<TopicPartition> tps = new ArrayList<>();
                for (int p = 0; p < partitions; p++) {
                    tps.add(new TopicPartition(topic, p));
                }
                c.assign(tps);
                c.seekToBeginning(tps);
            }
            Thread t = new Thread(m, "member-" + i);
            threads.add(t);
            t.start();
        }
        for (Thread t : threads) {
            t.join();
        }

        long count = 0, bytes = 0, errors = 0, bad = 0;
        long first = Long.MAX_VALUE, last = -1;
        String error = "";
        Map<Integer, List<long[]>> runs = new TreeMap<>();
        StringBuilder perMember = new StringBuilder();
        for (Member m : all) {
            perMember.append(perMember.length() == 0 ? "" : ",").append(m.count);
            count += m.count;
            bytes += m.bytes;
            errors += m.errors;
            bad += m.bad;
            if (error.isEmpty()) {
                error = m.error;
            }
            if (m.firstNanos >= 0) {
                first = Math.min(first, m.firstNanos);
                last = Math.max(last, m.lastNanos);
            }
            for (Map.Entry<Integer, List<long[]>> e : m.runs.entrySet()) {
                runs.computeIfAbsent(e.getKey(), p -> new ArrayList<>()).addAll(e.getValue());
            }
        }
        double firstS = first == Long.MAX_VALUE ? 0 : (first - shared.start) / 1e9;
        double lastS = last < 0 ? 0 : (last - shared.start) / 1e9;
        double steady = count > 1 && lastS > firstS ? (count - 1) / (lastS - firstS) : 0;
        StringBuilder parts = new StringBuilder();
        for (Map.Entry<Integer, List<long[]>> e : runs.entrySet()) {
            long pc = 0, pf = Long.MAX_VALUE, pl = -1;
            StringBuilder rs = new StringBuilder();
            for (long[] r : e.getValue()) {
                pc += r[1] - r[0] + 1;
                pf = Math.min(pf, r[0]);
                pl = Math.max(pl, r[1]);
                rs.append(rs.length() == 0 ? "" : ",").append('[').append(r[0]).append(',')
                        .append(r[1]).append(']');
            }
            parts.append(parts.length() == 0 ? "" : ",")
                    .append(String.format("{\"p\":%d,\"count\":%d,\"first\":%d,\"last\":%d,"
                            + "\"backwards\":0,\"gaps\":0,\"runs\":[%s]}", e.getKey(), pc, pf, pl, rs));
        }
        return String.format(java.util.Locale.ROOT,
                "{\"peer\":\"java\",\"version\":%s,\"op\":\"consume\",\"records\":%d,\"bytes\":%d,"
                        + "\"errors\":%d,\"elapsed_s\":%.6f,\"first_s\":%.6f,\"steady_rps\":%.1f,"
                        + "\"bad_values\":%d,\"member_records\":[%s],\"partitions\":[%s],\"error\":%s}",
                json(version()), count, bytes, errors, lastS, firstS, steady, bad, perMember, parts,
                json(error));
    }

    public static void main(String[] argv) throws Exception {
        if (argv.length < 1) {
            System.err.println("usage: ConsumePeer version|consume [--key value]...");
            System.exit(2);
        }
        Args a = new Args();
        for (int i = 1; i < argv.length; i += 2) {
            if (!argv[i].startsWith("--") || i + 1 >= argv.length) {
                System.err.println("ConsumePeer: bad argument " + argv[i]);
                System.exit(2);
            }
            String k = argv[i].substring(2);
            String v = argv[i + 1];
            if (k.equals("set")) {
                int eq = v.indexOf('=');
                if (eq < 0) {
                    System.err.println("ConsumePeer: --set " + v + ": expected key=value");
                    System.exit(2);
                }
                a.set.add(new String[] {v.substring(0, eq), v.substring(eq + 1)});
            } else {
                a.kv.put(k, v);
            }
        }
        switch (argv[0]) {
            case "version":
                System.out.println(version());
                return;
            case "consume":
                System.out.println(consume(a));
                // Kafka's background threads are gone after close; exit promptly anyway.
                System.exit(0);
                return;
            default:
                System.err.println("ConsumePeer: unknown op " + argv[0] + " (consume only)");
                System.exit(2);
        }
    }
}
