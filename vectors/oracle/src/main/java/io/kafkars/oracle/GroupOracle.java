package io.kafkars.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedWriter;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Assignment;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.GroupSubscription;
import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor.Subscription;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.Cluster;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;

/**
 * Consumer-group vectors from Kafka's own classes, both directions.
 *
 * <p>{@code group-generate <out-dir>} writes three JSON-lines files:
 * <ul>
 * <li>{@code protocol.jsonl}: {@link ConsumerProtocol} subscription and assignment bytes
 *     for versions 0-4 (4 is written as 3) over varied inputs, how Kafka reads them back,
 *     and bytes with a newer version header and trailing data, as Kafka reads them;</li>
 * <li>{@code user_data.jsonl}: the user data of {@link StickyAssignor} (previous
 *     assignment and generation) and {@link CooperativeStickyAssignor} (generation);</li>
 * <li>{@code assignors.jsonl}: the four built-in assignors over seeded scenarios (racks,
 *     static members, missing topics, owned partitions from earlier rounds). Each result
 *     is also recomputed with member ids, instance ids and topics renamed under
 *     order-preserving prefixes; {@code deterministic} says whether all runs agreed, i.e.
 *     whether Kafka's answer is independent of its hash-map iteration order.</li>
 * </ul>
 *
 * <p>{@code group-verify <dir>} reads {@code protocol.jsonl} written by our Rust code:
 * each line's bytes must decode in Kafka to the line's {@code decoded}, and Kafka must
 * serialize that back to the same bytes. Prints {@code group-verify: N passed, M failed}.
 */
final class GroupOracle {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory F = JsonNodeFactory.instance;
    private static final String[] PREFIXES = {"", "x", "Qq7", "zz_"};

    private GroupOracle() {}

    // ---------------------------------------------------------------- generate

    static int generate(String[] args) throws Exception {
        if (args.length != 1) throw new Main.UsageException("expected <out-dir>");
        Path out = Path.of(args[0]);
        Files.createDirectories(out);
        writeLines(out.resolve("protocol.jsonl"), protocolVectors());
        writeLines(out.resolve("user_data.jsonl"), userDataVectors());
        writeLines(out.resolve("assignors.jsonl"), assignorVectors());
        return 0;
    }

    private static void writeLines(Path path, List<JsonNode> lines) throws Exception {
        try (BufferedWriter w = Files.newBufferedWriter(path, StandardCharsets.UTF_8)) {
            for (JsonNode line : lines) {
                w.write(JSON.writeValueAsString(line));
                w.write('\n');
            }
        }
    }

    private static final String[] NAMES = {
        "", "a", "b", "orders", "orders.v2", "t-1", "T_0", "é", "日本", "\uFF61", "\uD83D\uDE00", "z",
    };

    private static String name(SplittableRandom r) {
        return r.nextInt(5) == 0 ? "topic-" + r.nextInt(1000) : NAMES[r.nextInt(NAMES.length)];
    }

    private static ByteBuffer randomBytes(SplittableRandom r, boolean nullable) {
        if (nullable && r.nextInt(3) == 0) return null;
        byte[] b = new byte[r.nextInt(4) == 0 ? 0 : r.nextInt(40)];
        r.nextBytes(b);
        return ByteBuffer.wrap(b);
    }

    private static List<TopicPartition> randomPartitions(SplittableRandom r) {
        List<TopicPartition> tps = new ArrayList<>();
        int n = r.nextInt(4) == 0 ? 0 : r.nextInt(12);
        for (int i = 0; i < n; i++) {
            int p = r.nextInt(6) == 0 ? r.nextInt() : r.nextInt(20);
            tps.add(new TopicPartition(NAMES[1 + r.nextInt(5)], p));
        }
        return tps;
    }

    private static List<JsonNode> protocolVectors() {
        List<JsonNode> lines = new ArrayList<>();
        SplittableRandom r = new SplittableRandom(0x6702_0001L);
        for (int c = 0; c < 40; c++) {
            List<String> topics = new ArrayList<>();
            int nt = c == 0 ? 0 : r.nextInt(6);
            for (int i = 0; i < nt; i++) topics.add(name(r));
            ByteBuffer userData = c == 0 ? null : randomBytes(r, true);
            List<TopicPartition> owned = c == 0 ? List.of() : randomPartitions(r);
            int[] gens = {-1, 0, 1, Integer.MAX_VALUE, -7, 42};
            int generation = c < gens.length ? gens[c] : r.nextInt(4) == 0 ? -1 : r.nextInt(1 << 20);
            String[] racks = {null, "", "rack-a", "r日"};
            Optional<String> rack = Optional.ofNullable(c < racks.length ? racks[c] : racks[r.nextInt(racks.length)]);
            Subscription s = new Subscription(topics, userData, owned, generation, rack);
            ObjectNode input = F.objectNode();
            input.set("topics", strings(topics));
            input.set("userData", bytes(userData));
            input.set("owned", pairs(owned));
            input.put("generationId", generation);
            input.put("rackId", rack.orElse(null));
            for (short v = 0; v <= 4; v++) {
                ByteBuffer bytes = ConsumerProtocol.serializeSubscription(s, v);
                String hex = hex(bytes);
                ObjectNode line = F.objectNode();
                line.put("kind", "subscription");
                line.put("case", c);
                line.put("version", v);
                line.set("input", input);
                line.put("hex", hex);
                line.set("decoded", describe(ConsumerProtocol.deserializeSubscription(unhex(hex))));
                lines.add(line);
                if (v == 3) lines.add(future("subscription", c, hex, r));
            }
        }
        for (int c = 0; c < 30; c++) {
            List<TopicPartition> partitions = c == 0 ? List.of() : randomPartitions(r);
            ByteBuffer userData = c == 0 ? null : randomBytes(r, true);
            Assignment a = new Assignment(partitions, userData);
            ObjectNode input = F.objectNode();
            input.set("partitions", pairs(partitions));
            input.set("userData", bytes(userData));
            for (short v = 0; v <= 4; v++) {
                String hex = hex(ConsumerProtocol.serializeAssignment(a, v));
                ObjectNode line = F.objectNode();
                line.put("kind", "assignment");
                line.put("case", c);
                line.put("version", v);
                line.set("input", input);
                line.put("hex", hex);
                line.set("decoded", describe(ConsumerProtocol.deserializeAssignment(unhex(hex))));
                lines.add(line);
                if (v == 3) lines.add(future("assignment", c, hex, r));
            }
        }
        return lines;
    }

    /** The v3 bytes under a newer version header and with trailing bytes, as Kafka reads them. */
    private static JsonNode future(String kind, int c, String v3hex, SplittableRandom r) {
        int version = 4 + r.nextInt(100);
        byte[] tail = new byte[1 + r.nextInt(8)];
        r.nextBytes(tail);
        String hex = String.format("%04x", version) + v3hex.substring(4) + hex(ByteBuffer.wrap(tail));
        ObjectNode line = F.objectNode();
        line.put("kind", kind + "-future");
        line.put("case", c);
        line.put("version", version);
        line.put("hex", hex);
        line.set("decoded", kind.equals("subscription")
                ? describe(ConsumerProtocol.deserializeSubscription(unhex(hex)))
                : describe(ConsumerProtocol.deserializeAssignment(unhex(hex))));
        return line;
    }

    static ObjectNode describe(Subscription s) {
        ObjectNode o = F.objectNode();
        o.set("topics", strings(s.topics()));
        o.set("userData", bytes(s.userData()));
        o.set("owned", pairs(s.ownedPartitions()));
        o.put("generationId", s.generationId().orElse(-1));
        o.put("rackId", s.rackId().orElse(null));
        return o;
    }

    static ObjectNode describe(Assignment a) {
        ObjectNode o = F.objectNode();
        o.set("partitions", pairs(a.partitions()));
        o.set("userData", bytes(a.userData()));
        return o;
    }

    private static List<JsonNode> userDataVectors() {
        List<JsonNode> lines = new ArrayList<>();
        SplittableRandom r = new SplittableRandom(0x6702_0002L);
        for (int c = 0; c < 30; c++) {
            List<TopicPartition> owned = new ArrayList<>();
            // Up to 30 topics, so the HashMap grouping them resizes.
            int topics = c < 3 ? c : 1 + r.nextInt(c < 10 ? 4 : 30);
            for (int i = 0; i < topics; i++) {
                String t = r.nextBoolean() ? "t" + i : "topic-" + r.nextInt(100000);
                int n = r.nextInt(4);
                for (int p = 0; p < n; p++) owned.add(new TopicPartition(t, r.nextInt(50)));
            }
            Collections.shuffle(owned, new java.util.Random(c));
            int generation = c == 0 ? 0 : r.nextInt(1000);
            StickyAssignor sticky = new StickyAssignor();
            sticky.onAssignment(new Assignment(owned), new ConsumerGroupMetadata("g", generation, "m", Optional.empty()));
            ObjectNode line = F.objectNode();
            line.put("assignor", "sticky");
            line.set("owned", pairs(owned));
            line.put("generation", generation);
            line.set("hex", bytes(sticky.subscriptionUserData(new HashSet<>())));
            lines.add(line);
        }
        for (int generation : new int[] {-1, 0, 7, Integer.MAX_VALUE}) {
            CooperativeStickyAssignor coop = new CooperativeStickyAssignor();
            if (generation != -1) {
                coop.onAssignment(new Assignment(List.of()), new ConsumerGroupMetadata("g", generation, "m", Optional.empty()));
            }
            ObjectNode line = F.objectNode();
            line.put("assignor", "cooperative-sticky");
            line.set("owned", F.arrayNode());
            line.put("generation", generation);
            line.set("hex", bytes(coop.subscriptionUserData(new HashSet<>())));
            lines.add(line);
        }
        return lines;
    }

    // ---------------------------------------------------------------- assignors

    /** A member of a scenario: what it subscribes to and what it owns from which generation. */
    static final class Member {
        String id;
        String instance;
        List<String> topics = new ArrayList<>();
        String rack;
        List<TopicPartition> owned = new ArrayList<>();
        int generation = -1;

        Member copy() {
            Member m = new Member();
            m.id = id;
            m.instance = instance;
            m.topics = new ArrayList<>(topics);
            m.rack = rack;
            m.owned = new ArrayList<>(owned);
            m.generation = generation;
            return m;
        }
    }

    /** Topic -> racks of each partition (index = partition). */
    static final class Scenario {
        String name;
        TreeMap<String, List<List<String>>> layout = new TreeMap<>();
        List<Member> members = new ArrayList<>();
    }

    private static List<JsonNode> assignorVectors() {
        List<JsonNode> lines = new ArrayList<>();
        SplittableRandom r = new SplittableRandom(0x6702_0003L);
        for (int c = 0; c < 60; c++) {
            Scenario s = randomScenario(r, "range-" + c, c % 4 == 0, c % 3 == 0);
            lines.add(vector("range", RangeAssignor::new, s));
        }
        for (int c = 0; c < 40; c++) {
            Scenario s = randomScenario(r, "roundrobin-" + c, c % 3 == 0, false);
            lines.add(vector("roundrobin", RoundRobinAssignor::new, s));
        }
        String[] sticky = {"sticky", "cooperative-sticky"};
        for (String kind : sticky) {
            Supplier<ConsumerPartitionAssignor> factory =
                    kind.equals("sticky") ? StickyAssignor::new : CooperativeStickyAssignor::new;
            for (int c = 0; c < 30; c++) {
                Scenario s = randomScenario(r, kind + "-" + c, c % 2 == 0, c % 5 == 0);
                // Three rounds: fresh, then after members leave/join, then once more.
                for (int round = 1; round <= 3; round++) {
                    s.name = kind + "-" + c + "-round" + round;
                    JsonNode line = vector(kind, factory, s);
                    lines.add(line);
                    s = nextRound(s, line.get("result"), round, r, round == 1);
                }
            }
        }
        lines.add(vector("cooperative-sticky", CooperativeStickyAssignor::new, conflicting(3, 3)));
        lines.add(vector("cooperative-sticky", CooperativeStickyAssignor::new, conflicting(3, 4)));
        lines.add(vector("sticky", StickyAssignor::new, conflicting(5, 2)));
        return lines;
    }

    private static Scenario randomScenario(SplittableRandom r, String name, boolean same, boolean racks) {
        Scenario s = new Scenario();
        s.name = name;
        int topics = 1 + r.nextInt(5);
        for (int t = 0; t < topics; t++) {
            List<List<String>> parts = new ArrayList<>();
            int n = r.nextInt(10) == 0 ? 0 : 1 + r.nextInt(9);
            for (int p = 0; p < n; p++) {
                List<String> rs = new ArrayList<>();
                if (racks) {
                    int k = r.nextInt(3);
                    for (int i = 0; i < k; i++) rs.add("r" + r.nextInt(3));
                }
                parts.add(rs);
            }
            s.layout.put("t" + t, parts);
        }
        List<String> names = new ArrayList<>(s.layout.keySet());
        int members = 1 + r.nextInt(7);
        for (int m = 0; m < members; m++) {
            Member mem = new Member();
            mem.id = "m" + r.nextInt(100) + "-" + m;
            if (r.nextInt(4) == 0) mem.instance = "i" + r.nextInt(100) + "-" + m;
            if (same) {
                mem.topics.addAll(names);
            } else {
                for (String t : names) if (r.nextInt(10) < 6) mem.topics.add(t);
                if (mem.topics.isEmpty()) mem.topics.add(names.get(r.nextInt(names.size())));
            }
            if (r.nextInt(8) == 0) mem.topics.add("absent");
            if (racks && r.nextInt(5) != 0) mem.rack = "r" + r.nextInt(3);
            s.members.add(mem);
        }
        return s;
    }

    /** The next round: everyone owns what it got; sometimes a member leaves and one joins. */
    private static Scenario nextRound(Scenario s, JsonNode result, int generation, SplittableRandom r, boolean change) {
        Scenario next = new Scenario();
        next.layout = s.layout;
        for (Member m : s.members) {
            Member copy = m.copy();
            copy.owned = new ArrayList<>();
            JsonNode got = result.get(m.id);
            got.fieldNames().forEachRemaining(t -> got.get(t).forEach(p -> copy.owned.add(new TopicPartition(t, p.asInt()))));
            copy.generation = generation;
            next.members.add(copy);
        }
        if (change) {
            if (next.members.size() > 1 && r.nextBoolean()) next.members.remove(r.nextInt(next.members.size()));
            int joiners = r.nextInt(3);
            for (int j = 0; j < joiners; j++) {
                Member joiner = s.members.get(r.nextInt(s.members.size())).copy();
                joiner.id = "joiner-" + j;
                joiner.instance = null;
                joiner.owned = new ArrayList<>();
                joiner.generation = -1;
                next.members.add(joiner);
            }
        }
        return next;
    }

    /** Two members claiming the same partitions in the given generations, plus a third. */
    private static Scenario conflicting(int genA, int genB) {
        Scenario s = new Scenario();
        s.name = "conflict-" + genA + "-" + genB;
        s.layout.put("t", new ArrayList<>(Collections.nCopies(6, List.of())));
        String[] ids = {"a", "b", "c"};
        for (String id : ids) {
            Member m = new Member();
            m.id = id;
            m.topics.add("t");
            s.members.add(m);
        }
        for (int p = 0; p < 3; p++) {
            s.members.get(0).owned.add(new TopicPartition("t", p));
            s.members.get(1).owned.add(new TopicPartition("t", p + 1));
        }
        s.members.get(0).generation = genA;
        s.members.get(1).generation = genB;
        return s;
    }

    private static JsonNode vector(String kind, Supplier<ConsumerPartitionAssignor> factory, Scenario s) {
        JsonNode first = null;
        boolean deterministic = true;
        for (String prefix : PREFIXES) {
            JsonNode result = run(kind, factory.get(), s, prefix);
            if (first == null) first = result;
            else if (!first.equals(result)) deterministic = false;
        }
        ObjectNode line = F.objectNode();
        line.put("case", s.name);
        line.put("assignor", kind);
        ObjectNode layout = line.putObject("layout");
        s.layout.forEach((t, parts) -> {
            ArrayNode a = layout.putArray(t);
            for (List<String> rs : parts) a.add(strings(rs));
        });
        ArrayNode members = line.putArray("members");
        for (Member m : s.members) {
            Subscription sub = subscription(kind, m, "");
            ObjectNode o = members.addObject();
            o.put("id", m.id);
            o.put("instanceId", m.instance);
            o.set("topics", strings(sub.topics()));
            o.set("owned", pairs(sub.ownedPartitions()));
            o.put("generationId", sub.generationId().orElse(-1));
            o.put("rackId", sub.rackId().orElse(null));
            o.set("userData", bytes(sub.userData()));
        }
        line.set("result", first);
        line.put("deterministic", deterministic);
        return line;
    }

    /** What the member sends, as Kafka's consumer builds it for this assignor. */
    private static Subscription subscription(String kind, Member m, String prefix) {
        List<String> topics = new ArrayList<>();
        for (String t : m.topics) topics.add(prefix + t);
        List<TopicPartition> owned = new ArrayList<>();
        for (TopicPartition tp : m.owned) owned.add(new TopicPartition(prefix + tp.topic(), tp.partition()));
        ByteBuffer userData = null;
        List<TopicPartition> ownedField = List.of();
        int generation = -1;
        if (kind.equals("sticky")) {
            // Eager: owned partitions were revoked before joining; they travel in the user data.
            generation = m.generation;
            if (m.generation >= 0) {
                StickyAssignor a = new StickyAssignor();
                a.onAssignment(new Assignment(owned), new ConsumerGroupMetadata("g", m.generation, "m", Optional.empty()));
                userData = a.subscriptionUserData(new HashSet<>(topics));
            }
        } else if (kind.equals("cooperative-sticky")) {
            generation = m.generation;
            ownedField = owned;
            CooperativeStickyAssignor a = new CooperativeStickyAssignor();
            if (m.generation >= 0) {
                a.onAssignment(new Assignment(owned), new ConsumerGroupMetadata("g", m.generation, "m", Optional.empty()));
            }
            userData = a.subscriptionUserData(new HashSet<>(topics));
        }
        return new Subscription(topics, userData, ownedField, generation, Optional.ofNullable(m.rack));
    }

    /** Runs the assignor with every name under {@code prefix}; the result without it. */
    private static JsonNode run(String kind, ConsumerPartitionAssignor assignor, Scenario s, String prefix) {
        Map<String, Node> nodes = new HashMap<>();
        List<PartitionInfo> partitions = new ArrayList<>();
        s.layout.forEach((t, parts) -> {
            for (int p = 0; p < parts.size(); p++) {
                List<Node> replicas = new ArrayList<>();
                for (String rack : parts.get(p)) {
                    replicas.add(nodes.computeIfAbsent(rack, k -> new Node(nodes.size(), "h" + k, 9092, k)));
                }
                Node[] rs = replicas.toArray(new Node[0]);
                partitions.add(new PartitionInfo(prefix + t, p, rs.length > 0 ? rs[0] : null, rs, rs));
            }
        });
        Cluster cluster = new Cluster("c", nodes.values(), partitions, Collections.emptySet(), Collections.emptySet());
        Map<String, Subscription> subs = new HashMap<>();
        for (Member m : s.members) {
            Subscription sub = subscription(kind, m, prefix);
            sub.setGroupInstanceId(Optional.ofNullable(m.instance).map(i -> prefix + i));
            subs.put(prefix + m.id, sub);
        }
        Map<String, Assignment> out = assignor.assign(cluster, new GroupSubscription(subs)).groupAssignment();
        ObjectNode result = F.objectNode();
        for (String id : new java.util.TreeSet<>(out.keySet())) {
            TreeMap<String, List<Integer>> byTopic = new TreeMap<>();
            for (TopicPartition tp : out.get(id).partitions()) {
                byTopic.computeIfAbsent(tp.topic().substring(prefix.length()), k -> new ArrayList<>()).add(tp.partition());
            }
            ObjectNode o = result.putObject(id.substring(prefix.length()));
            byTopic.forEach((t, ps) -> {
                Collections.sort(ps);
                ArrayNode a = o.putArray(t);
                ps.forEach(a::add);
            });
        }
        return result;
    }

    // ---------------------------------------------------------------- verify

    static int verify(String[] args) throws Exception {
        if (args.length != 1) throw new Main.UsageException("expected <dir>");
        Path file = Path.of(args[0]).resolve("protocol.jsonl");
        int passed = 0, failed = 0, lineNo = 0;
        for (String text : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            lineNo++;
            if (text.isBlank()) continue;
            JsonNode line = JSON.readTree(text);
            String kind = line.get("kind").asText();
            short version = (short) line.get("version").asInt();
            String hex = line.get("hex").asText();
            List<String> reasons = new ArrayList<>();
            try {
                JsonNode decoded;
                String again;
                if (kind.equals("subscription")) {
                    Subscription s = ConsumerProtocol.deserializeSubscription(unhex(hex));
                    decoded = describe(s);
                    again = hex(ConsumerProtocol.serializeSubscription(s, version));
                } else {
                    Assignment a = ConsumerProtocol.deserializeAssignment(unhex(hex));
                    decoded = describe(a);
                    again = hex(ConsumerProtocol.serializeAssignment(a, version));
                }
                if (!decoded.equals(line.get("decoded"))) reasons.add("decoded " + decoded + " != " + line.get("decoded"));
                if (!again.equals(hex)) reasons.add("re-encoded " + again + " != " + hex);
            } catch (Exception e) {
                reasons.add("Kafka could not read it: " + e);
            }
            if (reasons.isEmpty()) {
                passed++;
            } else {
                failed++;
                if (failed <= 50) System.out.println("FAIL " + file.getFileName() + ":" + lineNo + " " + kind + " v" + version + ": " + String.join("; ", reasons));
            }
        }
        System.out.println("group-verify: " + passed + " passed, " + failed + " failed");
        return failed > 0 || passed == 0 ? 1 : 0;
    }

    // ---------------------------------------------------------------- JSON helpers

    private static ArrayNode strings(List<String> xs) {
        ArrayNode a = F.arrayNode();
        xs.forEach(a::add);
        return a;
    }

    private static ArrayNode pairs(List<TopicPartition> tps) {
        ArrayNode a = F.arrayNode();
        for (TopicPartition tp : tps) a.addArray().add(tp.topic()).add(tp.partition());
        return a;
    }

    private static JsonNode bytes(ByteBuffer b) {
        return b == null ? F.nullNode() : F.textNode(hex(b));
    }

    static String hex(ByteBuffer buf) {
        ByteBuffer b = buf.duplicate();
        StringBuilder sb = new StringBuilder();
        while (b.hasRemaining()) sb.append(String.format("%02x", b.get() & 0xff));
        return sb.toString();
    }

    static ByteBuffer unhex(String hex) {
        byte[] b = new byte[hex.length() / 2];
        for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
        return ByteBuffer.wrap(b);
    }
}
