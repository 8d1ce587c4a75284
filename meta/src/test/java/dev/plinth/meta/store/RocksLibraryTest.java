package dev.plinth.meta.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** RocksDB's library comes from the one shared, owner-only copy, not from a fresh temporary file per process. */
class RocksLibraryTest {
    @TempDir
    Path directory;

    @Test
    void theLibraryIsMappedFromThePrivateSharedCopy() throws Exception {
        try (MetaStore store = MetaStore.open(directory.resolve("db"), 1 << 20)) {
            assertThat(store).isNotNull();
        }
        Path shared = Path.of(System.getProperty("java.io.tmpdir"), "plinth-" + System.getProperty("user.name"));
        assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(shared))).isEqualTo("rwx------");
        String maps = Files.readString(Path.of("/proc/self/maps"));
        assertThat(maps).contains(shared + "/rocksdbjni-").doesNotContainPattern("/librocksdbjni[0-9]+\\.so");
    }
}
