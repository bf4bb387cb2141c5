package io.kafkars.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/** A minimal model of Kafka's JSON message schemas (clients/src/main/resources/common/message). */
public final class Schema {

    /** A version range; "none" is empty (min > max). */
    public record Versions(int min, int max) {
        public static final Versions NONE = new Versions(1, 0);
        public static final Versions ALL = new Versions(0, Short.MAX_VALUE);

        public static Versions parse(String s) {
            if (s == null) return null;
            s = s.trim();
            if (s.equals("none")) return NONE;
            if (s.endsWith("+")) return new Versions(Integer.parseInt(s.substring(0, s.length() - 1).trim()), Short.MAX_VALUE);
            int dash = s.indexOf('-');
            if (dash > 0) {
                return new Versions(Integer.parseInt(s.substring(0, dash).trim()), Integer.parseInt(s.substring(dash + 1).trim()));
            }
            int v = Integer.parseInt(s);
            return new Versions(v, v);
        }

        public boolean contains(int v) {
            return v >= min && v <= max;
        }

        public boolean isEmpty() {
            return min > max;
        }
    }

    public static final class Field {
        public String name;
        public String type;
        public Versions versions;
        public Versions taggedVersions; // null if not tagged
        public Integer tag;
        public Versions nullableVersions = Versions.NONE;
        public JsonNode defaultValue; // raw "default" node or null
        public List<Field> fields; // inline struct fields, or null

        public boolean isArray() {
            return type.startsWith("[]");
        }

        public String elementType() {
            return isArray() ? type.substring(2) : type;
        }

        /** Name used by Kafka's JSON converters: first letter lower-cased. */
        public String jsonName() {
            return Character.toLowerCase(name.charAt(0)) + name.substring(1);
        }

        public boolean taggedIn(int v) {
            return tag != null && taggedVersions != null && taggedVersions.contains(v);
        }
    }

    public static final class Message {
        public Path file;
        public String name;
        public String type; // request, response, header, data
        public Integer apiKey;
        public Versions validVersions;
        public Versions flexibleVersions;
        public List<Field> fields;
        public final Map<String, List<Field>> structs = new HashMap<>(); // commonStructs + inline, by name

        public boolean flexible(int v) {
            return flexibleVersions.contains(v);
        }

        /** Fields of the struct type named {@code typeName} (element type of an array field, or struct field). */
        public List<Field> structFields(Field f) {
            if (f.fields != null) return f.fields;
            List<Field> s = structs.get(f.elementType());
            if (s == null) throw new IllegalStateException(file + ": unknown struct type " + f.type);
            return s;
        }
    }

    private static final ObjectMapper MAPPER = new ObjectMapper();

    private Schema() {}

    /** Remove // line comments that are outside string literals. */
    public static String stripComments(String text) {
        StringBuilder out = new StringBuilder(text.length());
        boolean inString = false;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (inString) {
                out.append(c);
                if (c == '\\' && i + 1 < text.length()) {
                    out.append(text.charAt(++i));
                } else if (c == '"') {
                    inString = false;
                }
            } else if (c == '"') {
                inString = true;
                out.append(c);
            } else if (c == '/' && i + 1 < text.length() && text.charAt(i + 1) == '/') {
                while (i < text.length() && text.charAt(i) != '\n') i++;
                if (i < text.length()) out.append('\n');
            } else {
                out.append(c);
            }
        }
        return out.toString();
    }

    public static List<Message> loadAll(Path dir) throws IOException {
        List<Path> files;
        try (Stream<Path> s = Files.list(dir)) {
            files = s.filter(p -> p.getFileName().toString().endsWith(".json")).sorted().toList();
        }
        List<Message> out = new ArrayList<>();
        for (Path p : files) out.add(load(p));
        return out;
    }

    public static Message load(Path file) throws IOException {
        JsonNode root = MAPPER.readTree(stripComments(Files.readString(file, StandardCharsets.UTF_8)));
        Message m = new Message();
        m.file = file;
        m.name = root.get("name").asText();
        m.type = root.get("type").asText();
        m.apiKey = root.has("apiKey") ? root.get("apiKey").asInt() : null;
        m.validVersions = Versions.parse(root.get("validVersions").asText());
        m.flexibleVersions = root.has("flexibleVersions") ? Versions.parse(root.get("flexibleVersions").asText()) : Versions.NONE;
        if (root.has("commonStructs")) {
            for (JsonNode s : root.get("commonStructs")) {
                m.structs.put(s.get("name").asText(), parseFields(s.get("fields"), m));
            }
        }
        m.fields = parseFields(root.get("fields"), m);
        return m;
    }

    private static List<Field> parseFields(JsonNode arr, Message m) {
        List<Field> out = new ArrayList<>();
        if (arr == null) return out;
        for (JsonNode n : arr) {
            Field f = new Field();
            f.name = n.get("name").asText();
            f.type = n.get("type").asText();
            f.taggedVersions = n.has("taggedVersions") ? Versions.parse(n.get("taggedVersions").asText()) : null;
            f.tag = n.has("tag") ? n.get("tag").asInt() : null;
            f.versions = n.has("versions") ? Versions.parse(n.get("versions").asText()) : f.taggedVersions;
            if (f.versions == null) throw new IllegalStateException(m.file + ": field " + f.name + " has no versions");
            if (n.has("nullableVersions")) f.nullableVersions = Versions.parse(n.get("nullableVersions").asText());
            f.defaultValue = n.get("default");
            if (n.has("fields")) {
                f.fields = parseFields(n.get("fields"), m);
                m.structs.put(f.elementType(), f.fields);
            }
            out.add(f);
        }
        return out;
    }
}
