package io.kafkars.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.zip.CRC32;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;

/**
 * Record batch vectors, both directions.
 *
 * <p>{@code records-generate <out-dir>} builds batches with Kafka's own
 * {@link MemoryRecordsBuilder} for every codec and magic (0, 1, 2) and writes
 * {@code <case>.bin} (the record set) and {@code <case>.json} (how Kafka's
 * {@link MemoryRecords} reads it back).
 *
 * <p>{@code records-verify <dir>} reads every {@code <case>.bin} in a directory
 * written by our Rust encoder with {@link MemoryRecords}, validates each batch
 * (CRC, sizes), decompresses and iterates it, and compares Kafka's reading with
 * {@code <case>.json}. Prints {@code N passed, M failed}; exits 1 on any failure.
 *
 * <p>JSON shape (shared with the Rust tests): a list of batches with
 * magic, baseOffset, lastOffset, compression, timestampType, maxTimestamp,
 * partitionLeaderEpoch, producerId, producerEpoch, baseSequence, transactional,
 * control and records; each record has offset, timestamp, sequence, key, value
 * (lowercase hex, null, or {"len","crc32"} when longer than 256 bytes), headers
 * ([key, value] pairs) and, in control batches, control {type, coordinatorEpoch}.
 */
final class RecordsOracle {
    private static final ObjectMapper JSON =
            new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    private static final ObjectMapper COMPACT = new ObjectMapper();
    private static final int INLINE_MAX = 256;
    private static final long T0 = 1_700_000_000_000L;
    private static final long APPEND_TIME = 1_700_000_999_000L;

    private RecordsOracle() {}

    // ---------------------------------------------------------------- generate

    static int generate(String[] args) throws Exception {
        if (args.length != 1) throw new Main.UsageException("expected <out-dir>");
        Path out = Path.of(args[0]);
        Files.createDirectories(out);
        try (DirectoryStream<Path> old = Files.newDirectoryStream(out, "*.{bin,json}")) {
            for (Path p : old) Files.delete(p);
        }
        TreeMap<String, ByteBuffer> cases = new TreeMap<>();
        String[] codecs = {"none", "gzip", "snappy", "lz4", "zstd"};
        for (byte magic = 0; magic <= 2; magic++) {
            for (String codec : codecs) {
                if (magic < 2 && codec.equals("zstd")) continue;
                String p = "v" + magic + "-" + codec + "-";
                TimestampType create = magic == 0 ? TimestampType.NO_TIMESTAMP_TYPE : TimestampType.CREATE_TIME;
                cases.put(p + "basic", build(magic, codec, create, 0, -1, (short) -1, -1, false, -1, smallRecords(magic)));
                cases.put(p + "offset", build(magic, codec, create, 1000, -1, (short) -1, -1, false, 7, smallRecords(magic)));
                if (magic > 0) {
                    cases.put(p + "logappend", build(magic, codec, TimestampType.LOG_APPEND_TIME, 0, -1, (short) -1, -1, false, -1, smallRecords(magic)));
                }
                cases.put(p + "large", build(magic, codec, create, 0, -1, (short) -1, -1, false, -1, largeRecords()));
                cases.put(p + "two-batches", concat(
                        build(magic, codec, create, 0, -1, (short) -1, -1, false, -1, smallRecords(magic)),
                        build(magic, codec, create, 6, -1, (short) -1, -1, false, -1, smallRecords(magic))));
                if (magic == 2) {
                    cases.put(p + "idempotent", build(magic, codec, create, 0, 1234, (short) 5, 100, false, -1, smallRecords(magic)));
                    cases.put(p + "transactional", build(magic, codec, create, 0, 1234, (short) 5, 0, true, 3, smallRecords(magic)));
                    cases.put(p + "seq-wrap", build(magic, codec, create, 0, 99, (short) 0, Integer.MAX_VALUE - 2, false, -1, smallRecords(magic)));
                }
            }
        }
        cases.put("v2-control-commit", MemoryRecords.withEndTransactionMarker(
                500L, T0, 4, 1234L, (short) 5, new EndTransactionMarker(ControlRecordType.COMMIT, 17)).buffer());
        cases.put("v2-control-abort", MemoryRecords.withEndTransactionMarker(
                501L, T0, 4, 1234L, (short) 5, new EndTransactionMarker(ControlRecordType.ABORT, 0)).buffer());
        for (var e : cases.entrySet()) {
            ByteBuffer buf = e.getValue().duplicate();
            byte[] bytes = new byte[buf.remaining()];
            buf.get(bytes);
            Files.write(out.resolve(e.getKey() + ".bin"), bytes);
            // Large cases are written compact, the rest indented for review.
            ObjectMapper writer = e.getKey().endsWith("-large") ? COMPACT : JSON;
            Files.writeString(out.resolve(e.getKey() + ".json"),
                    writer.writeValueAsString(describe(ByteBuffer.wrap(bytes))) + "\n");
        }
        System.out.println("records-generate: " + cases.size() + " cases written to " + out);
        return 0;
    }

    /** One record to append. */
    private record Rec(long timestamp, byte[] key, byte[] value, Header[] headers) {}

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static List<Rec> smallRecords(byte magic) {
        List<Rec> r = new ArrayList<>();
        Header[] none = new Header[0];
        Header[] some = magic < 2 ? none : new Header[] {
            new RecordHeader("trace", utf8("abc")),
            new RecordHeader("null-value", (byte[]) null),
            new RecordHeader("", new byte[0]),
        };
        r.add(new Rec(T0, utf8("key-1"), utf8("value-1"), none));
        r.add(new Rec(T0 + 5, null, utf8("null key"), some));
        r.add(new Rec(T0 - 1000, new byte[0], utf8("empty key"), none));
        r.add(new Rec(T0 + 2, utf8("tombstone"), null, none));
        r.add(new Rec(T0 + 3, utf8("empty value"), new byte[0], some));
        r.add(new Rec(T0 + 4, null, null, none));
        return r;
    }

    /** Over 1 MiB: 1100 records of 1000 bytes of JSON-like text. */
    private static List<Rec> largeRecords() {
        SplittableRandom rnd = new SplittableRandom(42);
        List<Rec> r = new ArrayList<>();
        for (int i = 0; i < 1100; i++) {
            StringBuilder sb = new StringBuilder();
            while (sb.length() < 1000) {
                sb.append("{\"id\":").append(rnd.nextInt(1_000_000)).append(",\"name\":\"user")
                        .append(rnd.nextInt(5000)).append("\",\"active\":").append(rnd.nextBoolean()).append('}');
            }
            sb.setLength(1000);
            r.add(new Rec(T0 + i, utf8("key-" + i), utf8(sb.toString()), new Header[0]));
        }
        return r;
    }

    private static Compression compression(String name) {
        return switch (name) {
            case "none" -> Compression.NONE;
            case "gzip" -> Compression.gzip().build();
            case "snappy" -> Compression.snappy().build();
            case "lz4" -> Compression.lz4().build();
            case "zstd" -> Compression.zstd().build();
            default -> throw new IllegalArgumentException(name);
        };
    }

    private static ByteBuffer build(byte magic, String codec, TimestampType tsType, long baseOffset,
            long producerId, short producerEpoch, int baseSequence, boolean transactional,
            int leaderEpoch, List<Rec> records) {
        ByteBuffer buf = ByteBuffer.allocate(4 << 20);
        MemoryRecordsBuilder b = MemoryRecords.builder(buf, magic, compression(codec), tsType, baseOffset,
                APPEND_TIME, producerId, producerEpoch, baseSequence, transactional, false, leaderEpoch);
        long offset = baseOffset;
        for (Rec r : records) {
            b.appendWithOffset(offset++, r.timestamp(), r.key(), r.value(), r.headers());
        }
        return b.build().buffer();
    }

    private static ByteBuffer concat(ByteBuffer a, ByteBuffer b) {
        ByteBuffer out = ByteBuffer.allocate(a.remaining() + b.remaining());
        out.put(a.duplicate()).put(b.duplicate()).flip();
        return out;
    }

    // ---------------------------------------------------------------- describe

    /** Kafka's reading of a record set, as JSON. Validates every batch. */
    static JsonNode describe(ByteBuffer bytes) throws IOException {
        MemoryRecords records = MemoryRecords.readableRecords(bytes);
        ArrayNode batches = JSON.createArrayNode();
        int valid = 0;
        for (RecordBatch batch : records.batches()) {
            batch.ensureValid();
            valid += batch.sizeInBytes();
            ObjectNode b = batches.addObject();
            b.put("magic", batch.magic());
            b.put("baseOffset", batch.baseOffset());
            b.put("lastOffset", batch.lastOffset());
            b.put("compression", batch.compressionType().name);
            b.put("timestampType", batch.timestampType().name);
            b.put("maxTimestamp", batch.maxTimestamp());
            b.put("partitionLeaderEpoch", batch.partitionLeaderEpoch());
            b.put("producerId", batch.producerId());
            b.put("producerEpoch", batch.producerEpoch());
            b.put("baseSequence", batch.baseSequence());
            b.put("transactional", batch.isTransactional());
            b.put("control", batch.isControlBatch());
            ArrayNode recs = b.putArray("records");
            for (Record r : batch) {
                r.ensureValid();
                ObjectNode o = recs.addObject();
                o.put("offset", r.offset());
                o.put("timestamp", r.timestamp());
                o.put("sequence", r.sequence());
                bytesField(o, "key", r.hasKey() ? r.key() : null);
                bytesField(o, "value", r.hasValue() ? r.value() : null);
                ArrayNode hs = o.putArray("headers");
                for (Header h : r.headers()) {
                    ArrayNode pair = hs.addArray();
                    pair.add(h.key());
                    if (h.value() == null) pair.addNull();
                    else pair.add(hex(ByteBuffer.wrap(h.value())));
                }
                if (batch.isControlBatch()) {
                    ObjectNode c = o.putObject("control");
                    ControlRecordType type = ControlRecordType.parse(r.key());
                    c.put("type", ControlRecordType.parseTypeId(r.key()));
                    if (type == ControlRecordType.ABORT || type == ControlRecordType.COMMIT) {
                        c.put("coordinatorEpoch", EndTransactionMarker.deserialize(r).coordinatorEpoch());
                    }
                }
            }
        }
        if (valid != bytes.remaining()) {
            throw new IOException("only " + valid + " of " + bytes.remaining() + " bytes form whole batches");
        }
        // Normalise number node types so that equals() compares values.
        return JSON.readTree(JSON.writeValueAsString(batches));
    }

    private static void bytesField(ObjectNode o, String name, ByteBuffer buf) {
        if (buf == null) {
            o.putNull(name);
        } else if (buf.remaining() <= INLINE_MAX) {
            o.put(name, hex(buf));
        } else {
            CRC32 crc = new CRC32();
            int len = buf.remaining();
            crc.update(buf.duplicate());
            ObjectNode d = o.putObject(name);
            d.put("len", len);
            d.put("crc32", crc.getValue());
        }
    }

    private static String hex(ByteBuffer buf) {
        ByteBuffer b = buf.duplicate();
        StringBuilder sb = new StringBuilder(b.remaining() * 2);
        while (b.hasRemaining()) {
            int v = b.get() & 0xFF;
            sb.append(Character.forDigit(v >> 4, 16)).append(Character.forDigit(v & 15, 16));
        }
        return sb.toString();
    }

    // ---------------------------------------------------------------- verify

    static int verify(String[] args) throws Exception {
        if (args.length != 1) throw new Main.UsageException("expected <dir>");
        Path dir = Path.of(args[0]);
        List<Path> bins = new ArrayList<>();
        try (DirectoryStream<Path> s = Files.newDirectoryStream(dir, "*.bin")) {
            s.forEach(bins::add);
        }
        bins.sort(null);
        int passed = 0;
        int failed = 0;
        for (Path bin : bins) {
            String name = bin.getFileName().toString().replaceFirst("\\.bin$", "");
            try {
                JsonNode expected = JSON.readTree(dir.resolve(name + ".json").toFile());
                JsonNode actual = describe(ByteBuffer.wrap(Files.readAllBytes(bin)));
                if (expected.equals(actual)) {
                    passed++;
                } else {
                    failed++;
                    System.out.println("FAIL " + name + ": Kafka reads\n" + JSON.writeValueAsString(actual));
                }
            } catch (Exception e) {
                failed++;
                System.out.println("FAIL " + name + ": " + e);
            }
        }
        if (bins.isEmpty()) {
            System.out.println("records-verify: no *.bin files in " + dir);
            return 1;
        }
        System.out.println("records-verify: " + passed + " passed, " + failed + " failed");
        return failed == 0 ? 0 : 1;
    }
}
