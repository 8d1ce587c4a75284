package dev.plinth.common.codec;

import static java.lang.constant.ConstantDescs.CD_List;
import static java.lang.constant.ConstantDescs.CD_Object;
import static java.lang.constant.ConstantDescs.CD_int;
import static java.lang.constant.ConstantDescs.CD_void;
import static java.lang.constant.ConstantDescs.INIT_NAME;
import static java.lang.constant.ConstantDescs.MTD_void;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.lang.classfile.ClassFile;
import java.lang.classfile.CodeBuilder;
import java.lang.classfile.Label;
import java.lang.classfile.TypeKind;
import java.lang.constant.ClassDesc;
import java.lang.constant.MethodTypeDesc;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
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
 *
 * <p>Each record type gets a small class generated on first use (see {@link RecordShape}) that
 * calls its accessors and canonical constructor directly: every metadata change encodes and decodes
 * dozens of records, and reflection (boxing every primitive, an array per construction, calls the
 * JIT cannot see through) was a quarter of the metadata service's CPU.
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
            // Built before publishing, so no thread sees a half-built shape. Nested records are
            // looked up at their first use, so building never recurses into this map.
            shape = new RecordShape(type);
            RecordShape raced = SHAPES.putIfAbsent(type, shape);
            if (raced != null) {
                return raced;
            }
        }
        return shape;
    }

    /**
     * Writes and reads one component value that is not a primitive. Public only because the
     * classes generated for records live in the records' packages and call it.
     */
    public interface ComponentCodec {
        void write(BinaryWriter writer, Object value);

        Object read(BinaryReader reader);
    }

    /** What the class generated for one record type does. Public for the same reason as {@link ComponentCodec}. */
    public interface GeneratedComponents {
        /** Writes the components of {@code record}, the ones that are not primitives through {@code codecs}. */
        void write(BinaryWriter writer, Object record, ComponentCodec[] codecs);

        /** Reads the components (defaults for those the reader runs out before) and builds the record. */
        Object read(BinaryReader reader, ComponentCodec[] codecs);
    }

    private static ComponentCodec codecFor(Type type) {
        if (type instanceof ParameterizedType parameterized && parameterized.getRawType() == List.class) {
            return listOf(nullable(codecFor(parameterized.getActualTypeArguments()[0])));
        }
        if (!(type instanceof Class<?> type1)) {
            throw new IllegalArgumentException("unsupported component type " + type);
        }
        if (type1 == Integer.class) {
            return codec((w, v) -> w.writeInt((Integer) v), BinaryReader::readInt);
        }
        if (type1 == Long.class) {
            return codec((w, v) -> w.writeLong((Long) v), BinaryReader::readLong);
        }
        if (type1 == Boolean.class) {
            return codec((w, v) -> w.writeBoolean((Boolean) v), BinaryReader::readBoolean);
        }
        if (type1 == String.class) {
            return codec((w, v) -> w.writeString((String) v), BinaryReader::readString);
        }
        if (type1 == byte[].class) {
            return codec((w, v) -> w.writeBytes((byte[]) v), BinaryReader::readBytes);
        }
        if (type1.isEnum()) {
            Object[] constants = type1.getEnumConstants();
            return codec((w, v) -> w.writeVarInt(((Enum<?>) v).ordinal()), r -> {
                int ordinal = r.readVarInt();
                if (ordinal >= constants.length) {
                    throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "unknown " + type1.getSimpleName() + " " + ordinal);
                }
                return constants[ordinal];
            });
        }
        if (type1.isRecord()) {
            return new NestedRecord(type1);
        }
        throw new IllegalArgumentException("unsupported component type " + type);
    }

    private interface Writer {
        void write(BinaryWriter writer, Object value);
    }

    private interface Reader {
        Object read(BinaryReader reader);
    }

    private static ComponentCodec codec(Writer writer, Reader reader) {
        return new ComponentCodec() {
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

    private static ComponentCodec listOf(ComponentCodec element) {
        return codec((writer, value) -> {
            List<?> list = (List<?>) value;
            writer.writeVarInt(list.size());
            for (Object item : list) {
                element.write(writer, item);
            }
        }, reader -> {
            int count = reader.readVarInt();
            if (count > reader.remaining()) {
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "list of " + count + " items in " + reader.remaining() + " bytes");
            }
            List<Object> list = new ArrayList<>(count);
            for (int i = 0; i < count; i++) {
                list.add(element.read(reader));
            }
            return Collections.unmodifiableList(list);
        });
    }

    private static ComponentCodec nullable(ComponentCodec codec) {
        return codec((writer, value) -> {
            writer.writeBoolean(value != null);
            if (value != null) {
                codec.write(writer, value);
            }
        }, reader -> reader.readBoolean() ? codec.read(reader) : null);
    }

    /** A record inside a record: its shape is looked up at first use and kept, a benign race since shapes are immutable. */
    private static final class NestedRecord implements ComponentCodec {
        private final Class<?> type;
        private RecordShape shape;

        NestedRecord(Class<?> type) {
            this.type = type;
        }

        private RecordShape shape() {
            RecordShape known = shape;
            if (known == null) {
                known = RecordCodec.shape(type);
                shape = known;
            }
            return known;
        }

        @Override
        public void write(BinaryWriter writer, Object value) {
            shape().write(writer, (Record) value);
        }

        @Override
        public Object read(BinaryReader reader) {
            return shape().read(reader);
        }
    }

    /** How to take one record type apart and build it again; immutable once built. */
    private static final class RecordShape {
        private final Class<?> type;
        private final ComponentCodec[] codecs;
        private final GeneratedComponents components;

        RecordShape(Class<?> type) {
            if (!type.isRecord()) {
                throw new IllegalArgumentException(type + " is not a record");
            }
            this.type = type;
            RecordComponent[] recordComponents = type.getRecordComponents();
            this.codecs = new ComponentCodec[recordComponents.length];
            for (int i = 0; i < recordComponents.length; i++) {
                if (!recordComponents[i].getType().isPrimitive()) {
                    codecs[i] = nullable(codecFor(recordComponents[i].getGenericType()));
                }
            }
            this.components = generate(type, recordComponents);
        }

        void write(BinaryWriter writer, Record value) {
            int lengthAt = writer.reserveInt();
            components.write(writer, value, codecs);
            writer.patchInt(lengthAt, writer.length() - lengthAt - 4);
        }

        Object read(BinaryReader reader) {
            int length = reader.readInt();
            if (length < 0) {
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "negative length of " + type.getSimpleName());
            }
            int outerLimit = reader.enter(length);
            try {
                Object value = components.read(reader, codecs);
                reader.leave(outerLimit); // bytes after the known components come from a newer writer: skipped
                return value;
            } catch (PlinthException e) {
                throw e;
            } catch (RuntimeException e) { // the record's constructor refused what it was given
                throw new PlinthException(ErrorCode.PROTOCOL_ERROR, "invalid " + type.getSimpleName() + ": " + e);
            }
        }
    }

    private static final ClassDesc CD_WRITER = BinaryWriter.class.describeConstable().orElseThrow();
    private static final ClassDesc CD_READER = BinaryReader.class.describeConstable().orElseThrow();
    private static final ClassDesc CD_CODEC = ComponentCodec.class.describeConstable().orElseThrow();
    private static final ClassDesc CD_GENERATED = GeneratedComponents.class.describeConstable().orElseThrow();
    private static final MethodTypeDesc CODEC_WRITE = MethodTypeDesc.of(CD_void, CD_WRITER, CD_Object);
    private static final MethodTypeDesc CODEC_READ = MethodTypeDesc.of(CD_Object, CD_READER);

    /**
     * Generates, as a hidden class nested with {@code type} (so it may call a private record's
     * members), the {@link GeneratedComponents} for it: accessor calls and primitive writes
     * in line, one canonical constructor call with components read into locals (defaults for
     * those an older writer did not have: 0, false, null, or an empty list).
     */
    private static GeneratedComponents generate(Class<?> type, RecordComponent[] recordComponents) {
        ClassDesc record = type.describeConstable().orElseThrow();
        ClassDesc[] componentTypes = new ClassDesc[recordComponents.length];
        for (int i = 0; i < recordComponents.length; i++) {
            componentTypes[i] = recordComponents[i].getType().describeConstable().orElseThrow();
        }
        byte[] bytes = ClassFile.of().build(ClassDesc.of(type.getName() + "$Codec"), classBuilder -> {
            classBuilder.withFlags(ClassFile.ACC_FINAL | ClassFile.ACC_SYNTHETIC);
            classBuilder.withInterfaceSymbols(CD_GENERATED);
            classBuilder.withMethodBody(INIT_NAME, MTD_void, ClassFile.ACC_PUBLIC,
                    code -> code.aload(0).invokespecial(CD_Object, INIT_NAME, MTD_void).return_());
            classBuilder.withMethodBody("write", MethodTypeDesc.of(CD_void, CD_WRITER, CD_Object, CD_CODEC.arrayType()),
                    ClassFile.ACC_PUBLIC, code -> {
                        int recordSlot = 4;
                        code.aload(2).checkcast(record).astore(recordSlot);
                        for (int i = 0; i < recordComponents.length; i++) {
                            Class<?> componentType = recordComponents[i].getType();
                            MethodTypeDesc accessor = MethodTypeDesc.of(componentTypes[i]);
                            if (componentType.isPrimitive()) {
                                code.aload(1).aload(recordSlot).invokevirtual(record, recordComponents[i].getName(), accessor);
                                code.invokevirtual(CD_WRITER, primitiveMethod("write", componentType), MethodTypeDesc.of(CD_void, componentTypes[i]));
                            } else {
                                code.aload(3).loadConstant(i).aaload().aload(1).aload(recordSlot)
                                        .invokevirtual(record, recordComponents[i].getName(), accessor)
                                        .invokeinterface(CD_CODEC, "write", CODEC_WRITE);
                            }
                        }
                        code.return_();
                    });
            classBuilder.withMethodBody("read", MethodTypeDesc.of(CD_Object, CD_READER, CD_CODEC.arrayType()), ClassFile.ACC_PUBLIC,
                    code -> generateRead(code, record, recordComponents, componentTypes));
        });
        try {
            MethodHandles.Lookup host = MethodHandles.privateLookupIn(type, MethodHandles.lookup());
            MethodHandles.Lookup generated = host.defineHiddenClass(bytes, true, MethodHandles.Lookup.ClassOption.NESTMATE);
            return (GeneratedComponents) generated.findConstructor(generated.lookupClass(), MethodType.methodType(void.class))
                    .invoke();
        } catch (Throwable e) {
            throw new IllegalArgumentException("cannot encode " + type, e);
        }
    }

    private static void generateRead(CodeBuilder code, ClassDesc record, RecordComponent[] recordComponents, ClassDesc[] componentTypes) {
        int[] slots = new int[recordComponents.length];
        int nextSlot = 3;
        for (int i = 0; i < recordComponents.length; i++) {
            Class<?> componentType = recordComponents[i].getType();
            TypeKind kind = TypeKind.from(componentTypes[i]);
            slots[i] = nextSlot;
            nextSlot += kind.slotSize();
            Label absent = code.newLabel();
            Label done = code.newLabel();
            code.aload(1).invokevirtual(CD_READER, "remaining", MethodTypeDesc.of(CD_int)).ifle(absent);
            if (componentType.isPrimitive()) {
                code.aload(1).invokevirtual(CD_READER, primitiveMethod("read", componentType), MethodTypeDesc.of(componentTypes[i]));
            } else {
                code.aload(2).loadConstant(i).aaload().aload(1).invokeinterface(CD_CODEC, "read", CODEC_READ).checkcast(componentTypes[i]);
            }
            code.storeLocal(kind, slots[i]).goto_(done);
            code.labelBinding(absent);
            if (componentType == List.class) {
                code.invokestatic(CD_List, "of", MethodTypeDesc.of(CD_List), true);
            } else if (componentType.isPrimitive()) {
                switch (kind) {
                    case LONG -> code.lconst_0();
                    case DOUBLE -> code.dconst_0();
                    default -> code.iconst_0();
                }
            } else {
                code.aconst_null();
            }
            code.storeLocal(kind, slots[i]);
            code.labelBinding(done);
        }
        code.new_(record).dup();
        for (int i = 0; i < recordComponents.length; i++) {
            code.loadLocal(TypeKind.from(componentTypes[i]), slots[i]);
        }
        code.invokespecial(record, INIT_NAME, MethodTypeDesc.of(CD_void, componentTypes)).areturn();
    }

    /** writeInt/readInt and so on: the BinaryWriter and BinaryReader methods for one primitive type. */
    private static String primitiveMethod(String verb, Class<?> primitive) {
        if (primitive == int.class || primitive == long.class || primitive == boolean.class || primitive == double.class) {
            String name = primitive.getName();
            return verb + Character.toUpperCase(name.charAt(0)) + name.substring(1);
        }
        throw new IllegalArgumentException("unsupported component type " + primitive);
    }
}
