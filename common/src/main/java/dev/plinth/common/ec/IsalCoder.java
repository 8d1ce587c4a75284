package dev.plinth.common.ec;

import static java.lang.foreign.ValueLayout.ADDRESS;
import static java.lang.foreign.ValueLayout.JAVA_BYTE;
import static java.lang.foreign.ValueLayout.JAVA_INT;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.invoke.MethodHandle;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The coder in Intel ISA-L (Debian's libisal2), called through FFM: {@code ec_init_tables} expands
 * the coefficients into its multiplication tables and {@code ec_encode_data} runs its SIMD kernels
 * (AVX2 or AVX-512 as the CPU has). Direct buffers are passed as they are; heap buffers are copied
 * into native memory and back.
 */
public final class IsalCoder implements Coder {
    private static final Logger log = LoggerFactory.getLogger(IsalCoder.class);
    private static final List<String> LIBRARY_PATHS = List.of("/usr/lib/x86_64-linux-gnu/libisal.so.2", "/lib/x86_64-linux-gnu/libisal.so.2",
            "/usr/lib64/libisal.so.2", "/usr/lib/libisal.so.2", "/usr/local/lib/libisal.so.2");

    static final IsalCoder INSTANCE = load();

    private final MethodHandle initTables;
    private final MethodHandle encodeData;
    private final MethodHandle cauchyMatrix;

    private IsalCoder(SymbolLookup library) {
        Linker linker = Linker.nativeLinker();
        initTables = linker.downcallHandle(library.find("ec_init_tables").orElseThrow(),
                FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT, ADDRESS, ADDRESS));
        encodeData = linker.downcallHandle(library.find("ec_encode_data").orElseThrow(),
                FunctionDescriptor.ofVoid(JAVA_INT, JAVA_INT, JAVA_INT, ADDRESS, ADDRESS, ADDRESS));
        cauchyMatrix = linker.downcallHandle(library.find("gf_gen_cauchy1_matrix").orElseThrow(),
                FunctionDescriptor.ofVoid(ADDRESS, JAVA_INT, JAVA_INT));
    }

    private static IsalCoder load() {
        for (String candidate : LIBRARY_PATHS) {
            if (Files.exists(Path.of(candidate))) {
                try {
                    return new IsalCoder(SymbolLookup.libraryLookup(Path.of(candidate), Arena.global()));
                } catch (RuntimeException | LinkageError e) {
                    log.warn("ISA-L at {} cannot be used ({}): erasure coding uses the Java coder", candidate, e.toString());
                    return null;
                }
            }
        }
        return null;
    }

    /** Whether ISA-L is installed and loads. */
    public static boolean available() {
        return INSTANCE != null;
    }

    /** The ISA-L coder; fails where {@link #available()} is false. */
    public static IsalCoder instance() {
        if (INSTANCE == null) {
            throw new IllegalStateException("ISA-L (libisal.so.2, the Debian package libisal2) is not installed here");
        }
        return INSTANCE;
    }

    @Override
    public void apply(byte[] coefficients, ByteBuffer[] inputs, ByteBuffer[] outputs, int length) {
        if (length == 0 || outputs.length == 0) {
            return;
        }
        int k = inputs.length;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment matrix = arena.allocateFrom(JAVA_BYTE, coefficients);
            MemorySegment tables = arena.allocate(32L * k * outputs.length);
            initTables.invokeExact(k, outputs.length, matrix, tables);
            MemorySegment sources = arena.allocate(ADDRESS, k);
            for (int j = 0; j < k; j++) {
                sources.setAtIndex(ADDRESS, j, native_(arena, inputs[j], length, true));
            }
            MemorySegment targets = arena.allocate(ADDRESS, outputs.length);
            MemorySegment[] copies = new MemorySegment[outputs.length];
            for (int r = 0; r < outputs.length; r++) {
                MemorySegment segment = native_(arena, outputs[r], length, false);
                copies[r] = outputs[r].isDirect() ? null : segment;
                targets.setAtIndex(ADDRESS, r, segment);
            }
            encodeData.invokeExact(length, k, outputs.length, tables, sources, targets);
            for (int r = 0; r < outputs.length; r++) {
                if (copies[r] != null) {
                    MemorySegment.ofBuffer(outputs[r].duplicate().limit(outputs[r].position() + length)).copyFrom(copies[r]);
                }
            }
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("ISA-L call failed", e);
        }
    }

    /** {@code length} bytes of {@code buffer} from its position, in native memory (a copy for a heap buffer; filled only for inputs). */
    private static MemorySegment native_(Arena arena, ByteBuffer buffer, int length, boolean input) {
        ByteBuffer range = buffer.duplicate();
        range.limit(range.position() + length);
        if (range.isDirect()) {
            return MemorySegment.ofBuffer(range);
        }
        MemorySegment copy = arena.allocate(length, 64);
        if (input) {
            copy.copyFrom(MemorySegment.ofBuffer(range));
        }
        return copy;
    }

    /** ISA-L's own gf_gen_cauchy1_matrix(a, k + m, k), to check {@link ErasureCode}'s copy of it. */
    byte[] cauchyMatrix(int k, int m) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment matrix = arena.allocate((long) (k + m) * k);
            cauchyMatrix.invokeExact(matrix, k + m, k);
            return matrix.toArray(JAVA_BYTE);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("ISA-L call failed", e);
        }
    }

    @Override
    public String name() {
        return "isa-l";
    }
}
