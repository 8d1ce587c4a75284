package dev.plinth.fuse;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * What a mount needs from the machine, checked without loading libfuse: {@link Libfuse} binds
 * its functions when its class is first used, which fails where the library is missing, so the
 * check that explains the failure must live apart from it.
 */
final class FusePrerequisites {
    private FusePrerequisites() {}

    /** Where Debian and others keep libfuse3; Temurin's default search path misses the multiarch directory. */
    private static final List<String> LIBRARY_PATHS = List.of(
            "/lib/x86_64-linux-gnu/libfuse3.so.3", "/usr/lib/x86_64-linux-gnu/libfuse3.so.3",
            "/usr/lib64/libfuse3.so.3", "/usr/lib/libfuse3.so.3", "/lib64/libfuse3.so.3",
            "/lib/aarch64-linux-gnu/libfuse3.so.3", "/usr/lib/aarch64-linux-gnu/libfuse3.so.3");

    static Path libraryPath() {
        for (String candidate : LIBRARY_PATHS) {
            if (Files.exists(Path.of(candidate))) {
                return Path.of(candidate);
            }
        }
        throw new IllegalStateException("libfuse3.so.3 not found (looked in " + LIBRARY_PATHS + "); install the fuse3 package");
    }

    /** What this machine lacks for a mount (a sentence naming each thing and what provides it), or null when nothing. */
    static String missing() {
        List<String> missing = new ArrayList<>();
        if (!Files.exists(Path.of("/dev/fuse"))) {
            missing.add("/dev/fuse (load the fuse kernel module: modprobe fuse; in a container, pass the device)");
        }
        if (LIBRARY_PATHS.stream().noneMatch(path -> Files.exists(Path.of(path)))) {
            missing.add("libfuse3.so.3 (the Debian package fuse3)");
        }
        if (!Files.isExecutable(Path.of("/usr/bin/fusermount3")) && !Files.isExecutable(Path.of("/bin/fusermount3"))) {
            missing.add("fusermount3 (the Debian package fuse3)");
        }
        return missing.isEmpty() ? null : "FUSE cannot mount here: missing " + String.join(", and ", missing);
    }
}
