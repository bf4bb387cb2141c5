package io.kafkars.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.concurrent.ConcurrentHashMap;

/** Thin reflective access to Kafka's generated message classes and JSON converters. */
public final class Kafka {
    private static final String PKG = "org.apache.kafka.common.message.";
    private static final ConcurrentHashMap<String, Method[]> CONVERTERS = new ConcurrentHashMap<>();
    static final HexFormat HEX = HexFormat.of();

    private Kafka() {}

    /** A fresh, empty Kafka message instance. direction is request/response/header; name is the schema name. */
    public static Message newMessage(Integer apiKey, String direction, String name) throws ReflectiveOperationException {
        switch (direction) {
            case "request":
                return ApiMessageType.fromApiKey(apiKey.shortValue()).newRequest();
            case "response":
                return ApiMessageType.fromApiKey(apiKey.shortValue()).newResponse();
            case "header":
                return (Message) Class.forName(PKG + name + "Data").getConstructor().newInstance();
            default:
                throw new IllegalArgumentException("unknown direction " + direction);
        }
    }

    private static Method[] converter(String dataClassName) {
        return CONVERTERS.computeIfAbsent(dataClassName, n -> {
            try {
                Class<?> data = Class.forName(PKG + n);
                Class<?> conv = Class.forName(PKG + n + "JsonConverter");
                return new Method[] {
                    conv.getMethod("read", JsonNode.class, short.class),
                    conv.getMethod("write", data, short.class, boolean.class),
                };
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("no JSON converter for " + n, e);
            }
        });
    }

    /** {@code <Name>JsonConverter.read(node, version)}. */
    public static Message fromJson(String schemaName, JsonNode node, short version) throws Exception {
        try {
            return (Message) converter(schemaName + "Data")[0].invoke(null, node, version);
        } catch (InvocationTargetException e) {
            throw unwrap(e);
        }
    }

    /** {@code <Name>JsonConverter.write(msg, version, true)}. */
    public static JsonNode toJson(Message msg, short version) throws Exception {
        try {
            return (JsonNode) converter(msg.getClass().getSimpleName())[1].invoke(null, msg, version, true);
        } catch (InvocationTargetException e) {
            throw unwrap(e);
        }
    }

    private static Exception unwrap(InvocationTargetException e) {
        Throwable c = e.getCause();
        if (c instanceof Exception ex) return ex;
        return new RuntimeException(c);
    }

    public static byte[] serialize(Message msg, short version) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = msg.size(cache, version);
        ByteBuffer buf = ByteBuffer.allocate(size);
        msg.write(new ByteBufferAccessor(buf), cache, version);
        if (buf.hasRemaining()) {
            throw new IllegalStateException("size() said " + size + " but write() produced " + buf.position() + " bytes");
        }
        return buf.array();
    }

    /** Decode {@code bytes} into {@code msg}; throws if bytes remain. */
    public static void deserialize(Message msg, byte[] bytes, short version) {
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        msg.read(new ByteBufferAccessor(buf), version);
        if (buf.hasRemaining()) {
            throw new IllegalStateException(buf.remaining() + " of " + bytes.length + " bytes left unread");
        }
    }

    public static String describe(Throwable t) {
        String m = t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
        return m.length() > 300 ? m.substring(0, 300) + "..." : m;
    }
}
