package dev.plinth.common;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class FileSystemSyncTest {
    @TempDir
    Path directory;

    @Test
    void syncsTheFileSystemOfADirectoryOrFileAndNamesAMissingOne() throws IOException {
        assertThat(FileSystemSync.available()).as("glibc on Linux, as the targets run").isTrue();
        Path file = Files.writeString(directory.resolve("written"), "bytes");
        FileSystemSync.sync(directory);
        FileSystemSync.sync(file);
        assertThatThrownBy(() -> FileSystemSync.sync(directory.resolve("absent"))).isInstanceOf(IOException.class).hasMessageContaining("absent");
    }
}
