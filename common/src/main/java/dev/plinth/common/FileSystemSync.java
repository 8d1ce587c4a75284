package dev.plinth.common;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;

/**
 * {@code syncfs(2)}: forces everything written to one file system to stable storage, which Java's
 * file API cannot ask for (it forces one file at a time). Through glibc (FFM).
 */
public final class FileSystemSync {
    private static final int O_RDONLY = 0;
    private static final MethodHandle OPEN;
    private static final MethodHandle SYNCFS;
    private static final MethodHandle CLOSE;

    static {
        MethodHandle open = null;
        MethodHandle syncfs = null;
        MethodHandle close = null;
        try {
            Linker linker = Linker.nativeLinker();
            var libc = linker.defaultLookup();
            FunctionDescriptor intOfInt = FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.JAVA_INT);
            // open(2) is variadic (its mode), called here without one
            open = linker.downcallHandle(libc.find("open").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.JAVA_INT), Linker.Option.firstVariadicArg(2));
            syncfs = linker.downcallHandle(libc.find("syncfs").orElseThrow(), intOfInt);
            close = linker.downcallHandle(libc.find("close").orElseThrow(), intOfInt);
        } catch (RuntimeException | LinkageError e) {
            open = null; // not glibc: available() says no
        }
        OPEN = open;
        SYNCFS = syncfs;
        CLOSE = close;
    }

    private FileSystemSync() {}

    /** Whether {@link #sync} can be called here. */
    public static boolean available() {
        return OPEN != null && System.getProperty("os.name").equals("Linux");
    }

    /** Forces every write to the file system that holds {@code path} (a file or directory that exists) to stable storage. */
    public static void sync(Path path) throws IOException {
        if (!available()) {
            throw new IOException("syncfs is not available here");
        }
        try (Arena arena = Arena.ofConfined()) {
            int fd = (int) OPEN.invokeExact(arena.allocateFrom(path.toString()), O_RDONLY);
            if (fd < 0) {
                throw new IOException("cannot open " + path + " to sync its file system");
            }
            int result;
            try {
                result = (int) SYNCFS.invokeExact(fd);
            } finally {
                int ignored = (int) CLOSE.invokeExact(fd);
            }
            if (result != 0) {
                throw new IOException("syncfs of the file system of " + path + " failed");
            }
        } catch (IOException | RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IOException("syncfs: " + e, e);
        }
    }
}
