package io.kafkars.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.BinaryNode;
import com.fasterxml.jackson.databind.node.BooleanNode;
import com.fasterxml.jackson.databind.node.DoubleNode;
import com.fasterxml.jackson.databind.node.IntNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.NullNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.databind.node.TextNode;
import io.kafkars.oracle.Schema.Field;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * {@code generate <schemas-dir> <out-dir>}: for every API key, valid version and
 * direction (plus the two headers) build {@link #CASES} deterministic messages
 * through Kafka's JSON converters, serialize them with Kafka and write one JSON
 * Lines file per API key. See ../README.md for the format.
 */
public final class Generate {
    static final int CASES = 4;
    static final int MIN_OK = 3;
    static final int MAX_ATTEMPTS = 25;
    static final ObjectMapper MAPPER = new ObjectMapper();
    private static final JsonNodeFactory NF = JsonNodeFactory.instance;

    private Generate() {}

    /** One output file. */
    private record Job(String fileName, Integer apiKey, List<Schema.Message> schemas, List<String> directions) {}

    private record JobResult(String fileName, List<String> lines, List<String> errors, List<String> warnings,
                             int combos, int attemptsRejected) {}

    public static int run(String[] args) throws Exception {
        if (args.length != 2) throw new Main.UsageException("expected 2 arguments, got " + args.length);
        Path schemasDir = Paths.get(args[0]);
        Path outDir = Paths.get(args[1]);
        List<Schema.Message> all = Schema.loadAll(schemasDir);

        Map<Integer, Schema.Message> requests = new TreeMap<>();
        Map<Integer, Schema.Message> responses = new TreeMap<>();
        Map<String, Schema.Message> headers = new TreeMap<>();
        for (Schema.Message m : all) {
            switch (m.type) {
                case "request" -> requests.put(m.apiKey, m);
                case "response" -> responses.put(m.apiKey, m);
                case "header" -> headers.put(m.name, m);
                default -> { }
            }
        }
        List<Job> jobs = new ArrayList<>();
        for (Map.Entry<Integer, Schema.Message> e : requests.entrySet()) {
            Schema.Message req = e.getValue();
            Schema.Message resp = responses.get(e.getKey());
            if (req.validVersions.isEmpty()) continue;
            if (resp == null) throw new IllegalStateException("no response schema for api key " + e.getKey());
            String api = req.name.endsWith("Request") ? req.name.substring(0, req.name.length() - "Request".length()) : req.name;
            jobs.add(new Job(String.format("%03d-%s.jsonl", e.getKey(), api), e.getKey(),
                List.of(req, resp), List.of("request", "response")));
        }
        for (String h : List.of("RequestHeader", "ResponseHeader")) {
            Schema.Message m = headers.get(h);
            if (m == null) throw new IllegalStateException("missing header schema " + h);
            jobs.add(new Job("header-" + h + ".jsonl", null, List.of(m), List.of("header")));
        }

        List<JobResult> results = jobs.parallelStream().map(Generate::runJob).toList();

        Files.createDirectories(outDir);
        try (Stream<Path> s = Files.list(outDir)) {
            for (Path p : s.filter(p -> p.getFileName().toString().endsWith(".jsonl")).toList()) Files.delete(p);
        }
        long bytes = 0;
        int lines = 0, combos = 0, rejected = 0;
        List<String> errors = new ArrayList<>();
        for (JobResult r : results) {
            StringBuilder sb = new StringBuilder();
            for (String l : r.lines) sb.append(l).append('\n');
            byte[] data = sb.toString().getBytes(StandardCharsets.UTF_8);
            Files.write(outDir.resolve(r.fileName), data);
            bytes += data.length;
            lines += r.lines.size();
            combos += r.combos;
            rejected += r.attemptsRejected;
            errors.addAll(r.errors);
            for (String w : r.warnings) System.err.println("warning: " + w);
        }
        for (String e : errors) System.err.println("error: " + e);
        System.out.printf("generate: %d files, %d vectors for %d (api, direction, version) combos, %d rejected attempts, %.2f MB%n",
            results.size(), lines, combos, rejected, bytes / 1e6);
        return errors.isEmpty() ? 0 : 1;
    }

    private static JobResult runJob(Job job) {
        List<String> lines = new ArrayList<>();
        List<String> errors = new ArrayList<>();
        List<String> warnings = new ArrayList<>();
        int combos = 0, rejected = 0;
        for (int i = 0; i < job.schemas.size(); i++) {
            Schema.Message m = job.schemas.get(i);
            String direction = job.directions.get(i);
            for (int v = m.validVersions.min(); v <= m.validVersions.max(); v++) {
                combos++;
                int ok = 0;
                List<JsonNode> randomCases = new ArrayList<>();
                for (int c = 0; c < CASES; c++) {
                    String lastError = null;
                    boolean done = false;
                    for (int attempt = 0; attempt < MAX_ATTEMPTS && !done; attempt++) {
                        try {
                            ObjectNode line = buildCase(job.apiKey, m, direction, (short) v, c, attempt);
                            lines.add(MAPPER.writeValueAsString(line));
                            if (c >= 2) randomCases.add(line.get("json"));
                            ok++;
                            done = true;
                        } catch (Exception | StackOverflowError e) {
                            rejected++;
                            lastError = Kafka.describe(e);
                        }
                    }
                    if (!done) {
                        warnings.add(String.format("%s %s v%d case %d: rejected %d attempts, last: %s",
                            m.name, direction, v, c, MAX_ATTEMPTS, lastError));
                    }
                }
                if (ok < MIN_OK) {
                    errors.add(String.format("%s %s v%d: only %d of %d cases succeeded", m.name, direction, v, ok, CASES));
                }
                // Every tagged field of this version must show up (non-default) in a random case.
                Set<String> seen = new HashSet<>();
                for (JsonNode j : randomCases) collectPaths(j, "", seen);
                Set<String> tagged = new java.util.TreeSet<>();
                collectTagged(m, m.fields, (short) v, "", tagged, 0);
                tagged.removeAll(seen);
                if (!tagged.isEmpty()) {
                    warnings.add(String.format("%s %s v%d: tagged fields never non-default: %s", m.name, direction, v, tagged));
                }
            }
        }
        return new JobResult(job.fileName, lines, errors, warnings, combos, rejected);
    }

    private static void collectPaths(JsonNode n, String prefix, Set<String> out) {
        if (n.isObject()) {
            n.fields().forEachRemaining(e -> {
                String p = prefix + "/" + e.getKey();
                out.add(p);
                collectPaths(e.getValue(), p, out);
            });
        } else if (n.isArray()) {
            for (JsonNode el : n) collectPaths(el, prefix, out);
        }
    }

    private static void collectTagged(Schema.Message m, List<Field> fields, short v, String prefix, Set<String> out, int depth) {
        if (depth > 10) return;
        for (Field f : fields) {
            if (!f.versions.contains(v)) continue;
            String p = prefix + "/" + f.jsonName();
            if (f.taggedIn(v)) out.add(p);
            if (!isPrimitive(f.elementType())) collectTagged(m, m.structFields(f), v, p, out, depth + 1);
        }
    }

    static long seed(Integer apiKey, String name, String direction, int version, int c, int attempt) {
        String s = apiKey + "/" + name + "/" + direction + "/" + version + "/" + c + "/" + attempt;
        long h = 0xcbf29ce484222325L; // FNV-1a 64
        for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
            h ^= (b & 0xff);
            h *= 0x100000001b3L;
        }
        return h;
    }

    static ObjectNode buildCase(Integer apiKey, Schema.Message m, String direction, short v, int c, int attempt) throws Exception {
        SplittableRandom r = new SplittableRandom(seed(apiKey, m.name, direction, v, c, attempt));
        Gen g = new Gen(m, v, c, r);
        ObjectNode tree = g.top();
        Message msg = Kafka.fromJson(m.name, tree, v);
        if (c == 3 && m.flexible(v)) {
            msg.unknownTaggedFields().add(new RawTaggedField(100, g.bytes(0, 8)));
            if (r.nextBoolean()) msg.unknownTaggedFields().add(new RawTaggedField(250, g.bytes(1, 8)));
        }
        byte[] bytes = Kafka.serialize(msg, v);
        Message back = Kafka.newMessage(apiKey, direction, m.name);
        Kafka.deserialize(back, bytes, v);
        byte[] again = Kafka.serialize(back, v);
        if (!Arrays.equals(bytes, again)) throw new IllegalStateException("re-read message serializes differently");
        JsonNode json = Kafka.toJson(back, v);

        ObjectNode line = NF.objectNode();
        line.set("apiKey", apiKey == null ? NullNode.instance : IntNode.valueOf(apiKey));
        line.put("name", m.name);
        line.put("direction", direction);
        line.put("version", (int) v);
        line.put("case", c);
        line.put("hex", Kafka.HEX.formatHex(bytes));
        ArrayNode unknown = line.putArray("unknownTags");
        for (RawTaggedField f : back.unknownTaggedFields()) {
            ObjectNode t = unknown.addObject();
            t.put("tag", f.tag());
            t.put("hex", Kafka.HEX.formatHex(f.data()));
        }
        line.set("json", json);
        return line;
    }

    static boolean isPrimitive(String type) {
        return switch (type) {
            case "bool", "int8", "int16", "int32", "int64", "uint16", "uint32", "float64", "uuid", "string", "bytes", "records" -> true;
            default -> false;
        };
    }

    /** Builds a random JSON tree that follows the schema for one version. */
    static final class Gen {
        private static final String[] SPECIAL = {
            "é", "日本", "😀", "ß", "\"", "\\", "\n", "\t", "/", "\u0001", "ü", "€", "한", " ", "{", "<"
        };
        private static final String ALNUM = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._";
        private static final double[] DOUBLES = {
            0.0, 1.0, -1.0, 0.1, 1.5, -2.75, 1e-300, 1e300, Double.MIN_VALUE, Double.MAX_VALUE, -Double.MAX_VALUE,
            1024.0, 123456789.125, 3.141592653589793, 1e21, 1e-7,
        };

        private final Schema.Message m;
        private final short v;
        private final int c;
        private final SplittableRandom r;
        private String bigArray; // json name of the top-level array made ~20 long (case 3 only)

        Gen(Schema.Message m, short v, int c, SplittableRandom r) {
            this.m = m;
            this.v = v;
            this.c = c;
            this.r = r;
        }

        ObjectNode top() {
            if (c == 3 && r.nextBoolean()) {
                List<String> arrays = new ArrayList<>();
                for (Field f : m.fields) if (f.versions.contains(v) && f.isArray()) arrays.add(f.jsonName());
                if (!arrays.isEmpty()) bigArray = arrays.get(r.nextInt(arrays.size()));
            }
            return struct(m.fields, 0, false);
        }

        private ObjectNode struct(List<Field> fields, int depth, boolean inBig) {
            if (depth > 12) throw new IllegalStateException("struct nesting too deep");
            ObjectNode o = NF.objectNode();
            for (Field f : fields) {
                if (!f.versions.contains(v)) continue;
                boolean tagged = f.taggedIn(v);
                if (tagged && c == 0) continue; // omitted: Kafka uses the default
                boolean makeBig = depth == 0 && f.jsonName().equals(bigArray);
                o.set(f.jsonName(), value(f, tagged, depth, inBig, makeBig));
            }
            return o;
        }

        private JsonNode value(Field f, boolean tagged, int depth, boolean inBig, boolean makeBig) {
            boolean nullable = f.nullableVersions.contains(v);
            boolean compound = f.isArray() || !isPrimitive(f.type);
            if (nullable && !tagged) {
                if (c == 0) return NullNode.instance;
                if (c == 2 && !compound && r.nextInt(10) == 0) return NullNode.instance;
                if (c == 3 && r.nextInt(4) == 0) return NullNode.instance;
            }
            if (nullable && tagged && c == 1 && !"null".equals(defaultText(f)) && !f.isArray()) {
                return NullNode.instance; // non-default: null where the default is not
            }
            if (f.isArray()) {
                int n = arrayLength(f, tagged, depth, inBig, makeBig);
                ArrayNode a = NF.arrayNode();
                String et = f.elementType();
                for (int i = 0; i < n; i++) {
                    a.add(isPrimitive(et) ? primitive(et, null) : struct(m.structFields(f), depth + 1, inBig || makeBig));
                }
                return a;
            }
            if (!isPrimitive(f.type)) return struct(m.structFields(f), depth + 1, inBig);
            JsonNode val = primitive(f.type, f);
            if (tagged && c >= 1) {
                // Tagged fields are omitted at their default; make them differ.
                for (int i = 0; i < 20 && equalsDefault(f, val); i++) val = randomPrimitive(f.type, true);
            }
            return val;
        }

        private int arrayLength(Field f, boolean tagged, int depth, boolean inBig, boolean makeBig) {
            boolean structs = !isPrimitive(f.elementType());
            int max = inBig ? 1 : depth <= 1 ? 3 : 2;
            int min = tagged ? 1 : 0;
            return switch (c) {
                case 0 -> 0;
                case 1 -> (structs && depth == 0) || tagged ? 1 : 0;
                case 2 -> r.nextInt(structs ? Math.max(1, min) : min, max + 1);
                default -> makeBig ? 20 : r.nextInt(min, max + 1);
            };
        }

        private JsonNode primitive(String type, Field f) {
            switch (c) {
                case 0:
                    return switch (type) {
                        case "bool" -> BooleanNode.FALSE;
                        case "int8", "int16", "int32", "uint16" -> IntNode.valueOf(r.nextInt(0, 4));
                        case "int64", "uint32" -> LongNode.valueOf(r.nextInt(0, 4));
                        case "float64" -> DoubleNode.valueOf(0.0);
                        case "uuid" -> TextNode.valueOf(Uuid.ZERO_UUID.toString());
                        case "string" -> TextNode.valueOf(ascii(r.nextInt(0, 4)));
                        case "bytes", "records" -> BinaryNode.valueOf(new byte[0]);
                        default -> throw new IllegalStateException(type);
                    };
                case 1:
                    return switch (type) {
                        case "bool" -> BooleanNode.TRUE;
                        case "int8" -> IntNode.valueOf(pick(0, -1, Byte.MIN_VALUE));
                        case "int16" -> IntNode.valueOf(pick(0, -1, Short.MIN_VALUE));
                        case "int32" -> IntNode.valueOf(pick(0, -1, Integer.MIN_VALUE));
                        case "uint16" -> IntNode.valueOf(pick(0, 65535, 65535));
                        case "uint32" -> LongNode.valueOf(pick(0, 4294967295L, 4294967295L));
                        case "int64" -> LongNode.valueOf(pick(0, -1, Long.MIN_VALUE));
                        case "float64" -> DoubleNode.valueOf(new double[] {0.0, -1.5, -Double.MAX_VALUE}[r.nextInt(3)]);
                        case "uuid" -> TextNode.valueOf(new Uuid(-1L, -1L).toString());
                        case "string" -> TextNode.valueOf("");
                        case "bytes", "records" -> BinaryNode.valueOf(new byte[0]);
                        default -> throw new IllegalStateException(type);
                    };
                default:
                    return randomPrimitive(type, f != null && f.taggedIn(v));
            }
        }

        private long pick(long... xs) {
            return xs[r.nextInt(xs.length)];
        }

        private int pick(int... xs) {
            return xs[r.nextInt(xs.length)];
        }

        private JsonNode randomPrimitive(String type, boolean nonEmpty) {
            boolean edge = r.nextInt(10) == 0;
            return switch (type) {
                case "bool" -> BooleanNode.valueOf(r.nextBoolean());
                case "int8" -> IntNode.valueOf(edge ? pick(Byte.MIN_VALUE, Byte.MAX_VALUE, 0, -1) : r.nextInt(Byte.MIN_VALUE, Byte.MAX_VALUE + 1));
                case "int16" -> IntNode.valueOf(edge ? pick(Short.MIN_VALUE, Short.MAX_VALUE, 0, -1) : r.nextInt(Short.MIN_VALUE, Short.MAX_VALUE + 1));
                case "int32" -> IntNode.valueOf(edge ? pick(Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -1) : r.nextInt());
                case "uint16" -> IntNode.valueOf(edge ? pick(0, 65535, 32768) : r.nextInt(0, 65536));
                case "uint32" -> LongNode.valueOf(edge ? pick(0L, 4294967295L) : r.nextLong(0, 1L << 32));
                case "int64" -> LongNode.valueOf(edge ? pick(Long.MIN_VALUE, Long.MAX_VALUE, 0L, -1L) : r.nextLong());
                case "float64" -> DoubleNode.valueOf(randomDouble());
                case "uuid" -> TextNode.valueOf(new Uuid(r.nextLong(), r.nextLong()).toString());
                case "string" -> TextNode.valueOf(randomString(nonEmpty));
                case "bytes" -> BinaryNode.valueOf(bytes(nonEmpty ? 1 : 0, 64));
                case "records" -> BinaryNode.valueOf(c == 2 ? recordBatch() : bytes(nonEmpty ? 1 : 0, 64));
                default -> throw new IllegalStateException(type);
            };
        }

        private double randomDouble() {
            return switch (r.nextInt(4)) {
                case 0 -> DOUBLES[r.nextInt(DOUBLES.length)];
                case 1 -> (double) r.nextInt(-1_000_000, 1_000_000);
                case 2 -> (r.nextDouble() - 0.5) * Math.pow(10, r.nextInt(-20, 21));
                default -> {
                    double d;
                    do d = Double.longBitsToDouble(r.nextLong()); while (!Double.isFinite(d));
                    yield d;
                }
            };
        }

        private String ascii(int len) {
            StringBuilder sb = new StringBuilder();
            for (int i = 0; i < len; i++) sb.append(ALNUM.charAt(r.nextInt(ALNUM.length())));
            return sb.toString();
        }

        private String randomString(boolean nonEmpty) {
            int p = r.nextInt(100);
            int len = p < 3 ? r.nextInt(250, 330) : p < 15 ? r.nextInt(1, 8) : r.nextInt(0, 41);
            if (nonEmpty && len == 0) len = 1;
            boolean fancy = r.nextInt(3) == 0;
            StringBuilder sb = new StringBuilder();
            int cps = 0;
            while (cps < len) {
                if (fancy && r.nextInt(6) == 0) {
                    String s = SPECIAL[r.nextInt(SPECIAL.length)];
                    sb.append(s);
                    cps += s.codePointCount(0, s.length());
                } else {
                    sb.append(ALNUM.charAt(r.nextInt(ALNUM.length())));
                    cps++;
                }
            }
            return sb.toString();
        }

        byte[] bytes(int min, int max) {
            byte[] b = new byte[r.nextInt(min, max + 1)];
            r.nextBytes(b);
            return b;
        }

        /** A real, small, uncompressed record batch (magic 2). */
        private byte[] recordBatch() {
            int n = r.nextInt(1, 4);
            SimpleRecord[] recs = new SimpleRecord[n];
            long ts = 1_700_000_000_000L + r.nextLong(0, 100_000_000_000L);
            for (int i = 0; i < n; i++) {
                byte[] key = r.nextInt(3) == 0 ? null : bytes(0, 16);
                byte[] value = r.nextInt(5) == 0 ? null : bytes(0, 32);
                Header[] headers = r.nextBoolean() ? new Header[0]
                    : new Header[] {new RecordHeader("h" + i, r.nextBoolean() ? null : bytes(0, 8))};
                recs[i] = new SimpleRecord(ts + r.nextInt(0, 10_000), key, value, headers);
            }
            MemoryRecords mr = MemoryRecords.withRecords(RecordBatch.MAGIC_VALUE_V2, r.nextLong(0, 1L << 40),
                Compression.NONE, TimestampType.CREATE_TIME, recs);
            byte[] out = new byte[mr.sizeInBytes()];
            mr.buffer().duplicate().get(out);
            return out;
        }

        private String defaultText(Field f) {
            JsonNode d = f.defaultValue;
            return d == null ? null : d.asText().trim();
        }

        /** Whether a primitive JSON value equals the field's schema default. */
        private boolean equalsDefault(Field f, JsonNode val) {
            String d = defaultText(f);
            switch (f.type) {
                case "bool":
                    return val.asBoolean() == (d != null && d.equals("true"));
                case "int8": case "int16": case "int32": case "int64": case "uint16": case "uint32":
                    return val.asLong() == (d == null || d.isEmpty() ? 0L : Long.decode(d));
                case "float64":
                    return val.asDouble() == (d == null || d.isEmpty() ? 0.0 : Double.parseDouble(d));
                case "string":
                    if (val.isNull()) return "null".equals(d);
                    return val.asText().equals(d == null ? "" : d);
                case "uuid":
                    return Uuid.fromString(val.asText()).equals(d == null || d.isEmpty() ? Uuid.ZERO_UUID : Uuid.fromString(d));
                case "bytes":
                    if (val.isNull()) return "null".equals(d);
                    try {
                        return val.binaryValue().length == 0;
                    } catch (IOException e) {
                        return false;
                    }
                default:
                    return false;
            }
        }
    }
}
