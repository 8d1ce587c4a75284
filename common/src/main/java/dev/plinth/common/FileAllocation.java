package dev.plinth.common;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

/**
 * The bytes a file takes on its disk (st_blocks times 512), which Java's file API does not give:
 * less than its length where it has holes (a compressed layout's slots), more where its last
 * block is partial. Through glibc's {@code stat} (FFM); where that cannot be called, the length.
 */
public final class FileAllocation {
    /** st_blocks in glibc's struct stat on x86-64 and on aarch64 alike. */
    private static final long ST_BLOCKS_OFFSET = 64;
    private static final long STAT_BYTES = 256;
    private static final MethodHandle STAT = statHandle();

    private FileAllocation() {}

    private static MethodHandle statHandle() {
        try {
            Linker linker = Linker.nativeLinker();
            return linker.downcallHandle(linker.defaultLookup().find("stat").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS));
        } catch (RuntimeException | LinkageError e) {
            return null;
        }
    }

    /** The bytes {@code file} takes on disk; 0 where it does not exist. */
    public static long of(Path file) throws java.io.IOException {
        if (STAT != null && isLinux64()) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment buffer = arena.allocate(STAT_BYTES, 8);
                int result = (int) STAT.invokeExact(arena.allocateFrom(file.toString()), buffer);
                if (result == 0) {
                    return buffer.get(ValueLayout.JAVA_LONG, ST_BLOCKS_OFFSET) * 512;
                }
            } catch (Throwable e) {
                // fall back to the length below
            }
        }
        try {
            return Files.size(file);
        } catch (NoSuchFileException e) {
            return 0;
        }
    }

    private static boolean isLinux64() {
        String arch = System.getProperty("os.arch");
        return System.getProperty("os.name").equals("Linux") && (arch.equals("amd64") || arch.equals("aarch64"));
    }
}
