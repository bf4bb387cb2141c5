package io.kafkars.oracle;

import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.types.RawTaggedField;

import java.io.BufferedReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * {@code verify <dir>}: checks every line of every {@code *.jsonl} file in
 * {@code dir} (vector format, see ../README.md) against Kafka: the hex must
 * decode completely, Kafka's JSON rendering must equal the line's {@code json},
 * Kafka must re-serialize to exactly {@code hex}, and the top-level unknown
 * tagged fields must equal {@code unknownTags}.
 */
public final class Verify {
    static final int MAX_FAIL_LINES = 50;
    private static final ObjectMapper MAPPER =
        new ObjectMapper().enable(JsonParser.Feature.STRICT_DUPLICATE_DETECTION);

    private Verify() {}

    public static int run(String[] args) throws Exception {
        if (args.length != 1) throw new Main.UsageException("expected 1 argument, got " + args.length);
        Path dir = Paths.get(args[0]);
        if (!Files.isDirectory(dir)) throw new Main.UsageException("not a directory: " + dir);
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".jsonl")).sorted().toList();
        }
        int passed = 0, failed = 0;
        for (Path file : files) {
            try (BufferedReader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
                String text;
                int lineNo = 0;
                while ((text = in.readLine()) != null) {
                    lineNo++;
                    if (text.isBlank()) continue;
                    String[] label = {"?", "?", "?"};
                    String reason;
                    try {
                        reason = check(text, label);
                    } catch (Exception | StackOverflowError e) {
                        reason = Kafka.describe(e);
                    }
                    if (reason == null) {
                        passed++;
                    } else {
                        failed++;
                        if (failed <= MAX_FAIL_LINES) {
                            System.out.printf("FAIL %s:%d %s %s v%s: %s%n", file.getFileName(), lineNo,
                                label[0], label[1], label[2], oneLine(reason));
                        }
                    }
                }
            }
        }
        System.out.printf("verify: %d passed, %d failed%n", passed, failed);
        return failed > 0 || passed == 0 ? 1 : 0;
    }

    private static String oneLine(String s) {
        s = s.replace("\n", "\\n").replace("\r", "\\r");
        return s.length() > 600 ? s.substring(0, 600) + "..." : s;
    }

    /** Returns null if the line passes, else the reason. label gets {name, direction, version}. */
    static String check(String text, String[] label) throws Exception {
        JsonNode line = MAPPER.readTree(text);
        if (!line.isObject()) return "line is not a JSON object";
        for (String k : new String[] {"apiKey", "name", "direction", "version", "hex", "json"}) {
            if (!line.has(k)) return "missing key \"" + k + "\"";
        }
        String name = line.get("name").asText();
        String direction = line.get("direction").asText();
        label[0] = name;
        label[1] = direction;
        label[2] = line.get("version").asText();
        if (!line.get("version").canConvertToInt()) return "bad version";
        short version = (short) line.get("version").asInt();
        Integer apiKey = line.get("apiKey").isNull() ? null : line.get("apiKey").asInt();

        Message msg;
        switch (direction) {
            case "request", "response" -> {
                if (apiKey == null) return "apiKey is null for a " + direction;
                msg = Kafka.newMessage(apiKey, direction, name);
            }
            case "header" -> {
                if (!name.equals("RequestHeader") && !name.equals("ResponseHeader")) return "unknown header name " + name;
                msg = Kafka.newMessage(null, direction, name);
            }
            default -> {
                return "unknown direction " + direction;
            }
        }
        String kafkaName = msg.getClass().getSimpleName().replaceFirst("Data$", "");
        if (!kafkaName.equals(name)) return "name " + name + " does not match Kafka's " + kafkaName;
        if (version < msg.lowestSupportedVersion() || version > msg.highestSupportedVersion()) {
            return "version not supported by Kafka (" + msg.lowestSupportedVersion() + "-" + msg.highestSupportedVersion() + ")";
        }
        byte[] bytes;
        try {
            bytes = Kafka.HEX.parseHex(line.get("hex").asText());
        } catch (IllegalArgumentException e) {
            return "bad hex: " + e.getMessage();
        }
        try {
            Kafka.deserialize(msg, bytes, version);
        } catch (Exception e) {
            return "Kafka failed to decode hex: " + Kafka.describe(e);
        }

        List<String> reasons = new ArrayList<>();
        // (a) JSON
        JsonNode expected = normalize(Kafka.toJson(msg, version));
        JsonNode actual = normalize(line.get("json"));
        String diff = diff(expected, actual, "");
        if (diff != null) reasons.add("json differs: " + diff);
        // (b) bytes
        byte[] again = Kafka.serialize(msg, version);
        if (!java.util.Arrays.equals(bytes, again)) {
            int i = java.util.Arrays.mismatch(bytes, again);
            reasons.add(String.format("Kafka re-serializes to different bytes (%d vs %d bytes, first difference at offset %d: %s vs Kafka %s)",
                bytes.length, again.length, i, hexAround(bytes, i), hexAround(again, i)));
        }
        // (c) unknown tagged fields
        StringBuilder kafkaTags = new StringBuilder("[");
        for (RawTaggedField f : msg.unknownTaggedFields()) {
            if (kafkaTags.length() > 1) kafkaTags.append(',');
            kafkaTags.append(f.tag()).append(':').append(Kafka.HEX.formatHex(f.data()));
        }
        kafkaTags.append(']');
        StringBuilder lineTags = new StringBuilder("[");
        JsonNode ut = line.get("unknownTags");
        if (ut != null && !ut.isNull()) {
            for (JsonNode t : ut) {
                if (lineTags.length() > 1) lineTags.append(',');
                lineTags.append(t.path("tag").asText()).append(':').append(t.path("hex").asText().toLowerCase());
            }
        }
        lineTags.append(']');
        if (!kafkaTags.toString().equals(lineTags.toString())) {
            reasons.add("unknownTags " + lineTags + " but Kafka decoded " + kafkaTags);
        }
        return reasons.isEmpty() ? null : String.join("; ", reasons);
    }

    private static String hexAround(byte[] b, int i) {
        if (i >= b.length) return "<end>";
        int from = Math.max(0, i - 4), to = Math.min(b.length, i + 8);
        return (from > 0 ? ".." : "") + Kafka.HEX.formatHex(b, from, to) + (to < b.length ? ".." : "");
    }

    /** Round-trip through text so node classes (IntNode/LongNode, BinaryNode/TextNode) don't matter. */
    static JsonNode normalize(JsonNode n) throws Exception {
        return MAPPER.readTree(MAPPER.writeValueAsString(n));
    }

    private static String show(JsonNode n) {
        String s = n == null ? "<absent>" : n.toString();
        return s.length() > 120 ? s.substring(0, 120) + "..." : s;
    }

    /** First difference between Kafka's JSON (expected) and the line's (actual), or null. Numbers compare by value. */
    static String diff(JsonNode expected, JsonNode actual, String path) {
        String where = path.isEmpty() ? "/" : path;
        if (expected.isNumber() && actual.isNumber()) {
            // Kafka integers (int8..int64, uint16) must be JSON integers of the same value;
            // Kafka float64 values may be written in any number syntax that parses to the same double.
            boolean same = expected.isIntegralNumber()
                ? actual.isIntegralNumber() && expected.bigIntegerValue().equals(actual.bigIntegerValue())
                : Double.compare(expected.doubleValue(), actual.doubleValue()) == 0;
            return same ? null : where + ": Kafka " + show(expected) + ", line " + show(actual);
        }
        if (expected.getNodeType() != actual.getNodeType()) {
            return where + ": Kafka " + show(expected) + ", line " + show(actual);
        }
        if (expected.isObject()) {
            TreeSet<String> missing = new TreeSet<>(), extra = new TreeSet<>();
            expected.fieldNames().forEachRemaining(k -> { if (!actual.has(k)) missing.add(k); });
            actual.fieldNames().forEachRemaining(k -> { if (!expected.has(k)) extra.add(k); });
            if (!missing.isEmpty() || !extra.isEmpty()) {
                return where + ": keys missing in line " + missing + ", extra keys in line " + extra;
            }
            Iterator<Map.Entry<String, JsonNode>> it = expected.fields();
            while (it.hasNext()) {
                Map.Entry<String, JsonNode> e = it.next();
                String d = diff(e.getValue(), actual.get(e.getKey()), path + "/" + e.getKey());
                if (d != null) return d;
            }
            return null;
        }
        if (expected.isArray()) {
            if (expected.size() != actual.size()) {
                return where + ": Kafka has " + expected.size() + " elements, line " + actual.size();
            }
            for (int i = 0; i < expected.size(); i++) {
                String d = diff(expected.get(i), actual.get(i), path + "/" + i);
                if (d != null) return d;
            }
            return null;
        }
        return expected.equals(actual) ? null : where + ": Kafka " + show(expected) + ", line " + show(actual);
    }
}
