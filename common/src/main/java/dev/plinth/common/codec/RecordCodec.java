package dev.plinth.common.codec;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.RecordComponent;
import java.lang.reflect.Type;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Encodes records in a compact binary form, for wire messages and on-disk values alike, so that
 * both are declared once as plain records. Every record (nested ones too) is a 4-byte length and
 * then its components in declaration order: primitives big-endian, strings and byte arrays
 * length-prefixed, lists count-prefixed, enums by ordinal, and a presence byte before every
 * reference that may be null.
 *
 * <p>Compatibility rule: a record that is on the wire or on disk only ever gains components at the
 * end, and its enums only gain constants at the end; anything else needs a new format version.
 * The length prefix is what makes the rule hold: a reader that knows fewer components skips the
 * bytes it does not understand, and a reader that knows more gets null (or 0, false) for the
 * components the writer did not have. Thread-safe.
 */
public final class RecordCodec {
    private static final ConcurrentHashMap<Class<?>, RecordShape> SHAPES = new ConcurrentHashMap<>();
    private static final int ENCODED_BYTES_MAX = 64 << 20;

    private RecordCodec() {}

    public static byte[] encode(Record value) {
        BinaryWriter writer = new BinaryWriter(128, ENCODED_BYTES_MAX);
        encode(value, writer);
        return writer.toByteArray();
    }

    public static void encode(Record value, BinaryWriter writer) {
        shape(value.getClass()).write(writer, value);
    }

    /** Decodes a whole buffer; trailing bytes are an error. */
    public static <T extends Record> T decode(Class<T> type, ByteBuffer buffer) {
        BinaryReader reader = new BinaryReader(buffer);
        T value = decode(type, reader);
        reader.expectEnd();
        return value;
    }

    public static <T extends Record> T decode(Class<T> type, byte[] bytes) {
        return decode(type, ByteBuffer.wrap(bytes));
    }

    public static <T extends Record> T decode(Class<T> type, BinaryReader reader) {
        return type.cast(shape(type).read(reader));
    }

    private static RecordShape shape(Class<?> type) {
        RecordShape shape = SHAPES.get(type);
        if (shape == null) {
            // Resolve before publishing, so no thread sees a half-built shape. Nested records are
            // looked up lazily at encode time, so resolving never recurses into this map.
            shape = new RecordShape(type);
            shape.resolve();
            RecordShape raced = SHAPES.putIfAbsent(type, shape);
            if (raced != null) {
                return raced;
            }
        }
        return shape;
    }

    private interface FieldCodec {
        void write(BinaryWriter writer, Object value);

        Object read(BinaryReader reader);
    }

    private static FieldCodec codecFor(Type type) {
        if (type instanceof ParameterizedType parameterized && parameterized.getRawType() == List.class) {
            FieldCodec element = nullable(codecFor(parameterized.getActualTypeArguments()[0]));
            return new FieldCodec() {
                @Override
                public void write(BinaryWriter writer, Object value) {
                    List<?> list = (List<?>) value;
                    writer.writeVarInt(list.size());
                    for (Object item : list) {
                        element.write(writer, item);
                    }
                }

                @Override
                public Object read(BinaryReader reader) {
                    int count = reader.readVarInt();
                    if (count > reader.remaining()) {
                        throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "list of " + count + " items in " + reader.remaining() + " bytes");
                    }
                    List<Object> list = new ArrayList<>(count);
                    for (int i = 0; i < count; i++) {
                        list.add(element.read(reader));
                    }
                    return Collections.unmodifiableList(list);
                }
            };
        }
        if (!(type instanceof Class<?> type1)) {
            throw new IllegalArgumentException("unsupported component type " + type);
        }
        if (type1 == int.class) {
            return primitive((w, v) -> w.writeInt((Integer) v), BinaryReader::readInt);
        }
        if (type1 == long.class) {
            return primitive((w, v) -> w.writeLong((Long) v), BinaryReader::readLong);
        }
        if (type1 == boolean.class) {
            return primitive((w, v) -> w.writeByte((Boolean) v ? 1 : 0), r -> {
                int b = r.readByte();
                if (b > 1) {
                    throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "bad boolean " + b);
                }
                return b == 1;
            });
        }
        if (type1 == double.class) {
            return primitive((w, v) -> w.writeLong(Double.doubleToRawLongBits((Double) v)), r -> Double.longBitsToDouble(r.readLong()));
        }
        if (type1 == Integer.class || type1 == Long.class || type1 == Boolean.class) {
            return codecFor(type1 == Integer.class ? int.class : type1 == Long.class ? long.class : boolean.class);
        }
        if (type1 == String.class) {
            return primitive((w, v) -> w.writeString((String) v), BinaryReader::readString);
        }
        if (type1 == byte[].class) {
            return primitive((w, v) -> w.writeBytes((byte[]) v), BinaryReader::readBytes);
        }
        if (type1.isEnum()) {
            Object[] constants = type1.getEnumConstants();
            return primitive((w, v) -> w.writeVarInt(((Enum<?>) v).ordinal()), r -> {
                int ordinal = r.readVarInt();
                if (ordinal >= constants.length) {
                    throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "unknown " + type1.getSimpleName() + " " + ordinal);
                }
                return constants[ordinal];
            });
        }
        if (type1.isRecord()) {
            return new FieldCodec() {
                @Override
                public void write(BinaryWriter writer, Object value) {
                    shape(type1).write(writer, (Record) value);
                }

                @Override
                public Object read(BinaryReader reader) {
                    return shape(type1).read(reader);
                }
            };
        }
        throw new IllegalArgumentException("unsupported component type " + type);
    }

    private interface Writer {
        void write(BinaryWriter writer, Object value);
    }

    private interface Reader {
        Object read(BinaryReader reader);
    }

    private static FieldCodec primitive(Writer writer, Reader reader) {
        return new FieldCodec() {
            @Override
            public void write(BinaryWriter out, Object value) {
                writer.write(out, value);
            }

            @Override
            public Object read(BinaryReader in) {
                return reader.read(in);
            }
        };
    }

    private static FieldCodec nullable(FieldCodec codec) {
        return new FieldCodec() {
            @Override
            public void write(BinaryWriter writer, Object value) {
                if (value == null) {
                    writer.writeByte(0);
                } else {
                    writer.writeByte(1);
                    codec.write(writer, value);
                }
            }

            @Override
            public Object read(BinaryReader reader) {
                int present = reader.readByte();
                if (present > 1) {
                    throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "bad presence byte " + present);
                }
                return present == 0 ? null : codec.read(reader);
            }
        };
    }

    /**
     * How to take one record type apart and build it again. Uses core reflection (method handles
     * inside since JDK 18): {@code MethodHandle.invokeWithArguments} on a handle that is not a
     * constant built new lambda forms on every call and showed up in profiles of the metadata path.
     */
    private static Object defaultOf(Class<?> type) {
        if (type == int.class) {
            return 0;
        }
        if (type == long.class) {
            return 0L;
        }
        if (type == boolean.class) {
            return false;
        }
        if (type == double.class) {
            return 0.0;
        }
        if (type == List.class) {
            return List.of();
        }
        return null;
    }

    private static final class RecordShape {
        private final Class<?> type;
        private java.lang.reflect.Method[] accessors;
        private FieldCodec[] codecs;
        private java.lang.reflect.Constructor<?> constructor;
        private Class<?>[] parameterTypes;

        RecordShape(Class<?> type) {
            if (!type.isRecord()) {
                throw new IllegalArgumentException(type + " is not a record");
            }
            this.type = type;
        }

        void resolve() {
            try {
                RecordComponent[] components = type.getRecordComponents();
                java.lang.reflect.Method[] methods = new java.lang.reflect.Method[components.length];
                FieldCodec[] fieldCodecs = new FieldCodec[components.length];
                Class<?>[] parameterTypes = new Class<?>[components.length];
                for (int i = 0; i < components.length; i++) {
                    methods[i] = components[i].getAccessor();
                    methods[i].setAccessible(true);
                    FieldCodec codec = codecFor(components[i].getGenericType());
                    fieldCodecs[i] = components[i].getType().isPrimitive() ? codec : nullable(codec);
                    parameterTypes[i] = components[i].getType();
                }
                var canonical = type.getDeclaredConstructor(parameterTypes);
                canonical.setAccessible(true);
                this.constructor = canonical;
                this.parameterTypes = parameterTypes;
                this.accessors = methods;
                this.codecs = fieldCodecs;
            } catch (ReflectiveOperationException e) {
                throw new IllegalArgumentException("cannot encode " + type, e);
            }
        }

        void write(BinaryWriter writer, Record value) {
            try {
                int lengthAt = writer.reserveInt();
                for (int i = 0; i < accessors.length; i++) {
                    codecs[i].write(writer, accessors[i].invoke(value));
                }
                writer.patchInt(lengthAt, writer.length() - lengthAt - 4);
            } catch (IllegalAccessException e) {
                throw new IllegalStateException(e);
            } catch (java.lang.reflect.InvocationTargetException e) {
                throw e.getCause() instanceof RuntimeException runtime ? runtime : new IllegalStateException(e.getCause());
            }
        }

        Object read(BinaryReader outer) {
            int length = outer.readInt();
            if (length < 0) {
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "negative length of " + type.getSimpleName());
            }
            BinaryReader reader = outer.limited(length);
            Object[] arguments = new Object[codecs.length];
            for (int i = 0; i < codecs.length; i++) {
                // components the writer did not have (an older version) read as their defaults
                arguments[i] = reader.remaining() > 0 ? codecs[i].read(reader) : defaultOf(parameterTypes[i]);
            }
            // bytes after the known components come from a newer writer: skipped with the record
            try {
                return constructor.newInstance(arguments);
            } catch (java.lang.reflect.InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof PlinthException plinth) {
                    throw plinth;
                }
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "invalid " + type.getSimpleName() + ": " + cause);
            } catch (IllegalArgumentException e) {
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "invalid " + type.getSimpleName() + ": " + e.getMessage());
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("cannot build " + type.getSimpleName(), e);
            }
        }
    }
}
