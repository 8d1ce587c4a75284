package dev.plinth.wire;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.codec.BinaryWriter;
import dev.plinth.common.codec.RecordCodec;
import io.netty.buffer.ByteBuf;
import java.util.HashMap;
import java.util.Map;

/**
 * The numbered list of messages. A request type and its response type share one number; numbers
 * are never reused. Every message class of every role is registered here, so one look shows the
 * whole protocol.
 */
public final class Protocol {
    private static final Map<Integer, Class<? extends Record>> REQUEST_BY_TYPE = new HashMap<>();
    private static final Map<Integer, Class<? extends Record>> RESPONSE_BY_TYPE = new HashMap<>();
    private static final Map<Class<?>, Integer> TYPE_BY_REQUEST = new HashMap<>();

    static {
        Messages.registerAll(Protocol::register);
    }

    private Protocol() {}

    private static void register(int type, Class<? extends Record> request, Class<? extends Record> response) {
        if (REQUEST_BY_TYPE.putIfAbsent(type, request) != null || TYPE_BY_REQUEST.putIfAbsent(request, type) != null) {
            throw new AssertionError("message type registered twice: " + type + " " + request);
        }
        RESPONSE_BY_TYPE.put(type, response);
    }

    public static int typeOf(Record request) {
        Integer type = TYPE_BY_REQUEST.get(request.getClass());
        if (type == null) {
            throw new IllegalArgumentException("not a registered request: " + request.getClass());
        }
        return type;
    }

    static boolean isRequest(Class<?> type) {
        return TYPE_BY_REQUEST.containsKey(type);
    }

    public static Class<? extends Record> requestClass(int type) {
        Class<? extends Record> request = REQUEST_BY_TYPE.get(type);
        if (request == null) {
            throw new PlinthException(ErrorCode.NOT_SUPPORTED, "unknown message type " + type);
        }
        return request;
    }

    public static Class<? extends Record> responseClass(int type) {
        return RESPONSE_BY_TYPE.get(type);
    }

    static Record decode(Class<? extends Record> type, ByteBuf header) {
        return RecordCodec.decode(type, header.nioBuffer());
    }

    static BinaryWriter encode(Record message) {
        BinaryWriter writer = new BinaryWriter(256, Frame.HEADER_BYTES_MAX);
        try {
            RecordCodec.encode(message, writer);
        } catch (IllegalStateException e) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "message too large: " + e.getMessage());
        }
        return writer;
    }
}
