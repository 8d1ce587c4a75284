package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The cluster through nothing but java.nio.file. */
class NioProviderTest {
    @TempDir
    Path directory;

    @Test
    void filesApiWorksOnPlinthPaths() throws IOException {
        try (MiniCluster cluster = MiniCluster.start(directory)) {
            URI uri = URI.create("plinth://" + cluster.server().rpcAddress() + "/");
            try (FileSystem plinth = FileSystems.newFileSystem(uri, Map.of("secretFile", cluster.server().secretFile().toString()))) {
                Path root = Path.of(uri);
                assertThat(root.getFileSystem()).isSameAs(plinth);
                Path data = Files.createDirectories(root.resolve("datasets/shard-0"));
                byte[] bytes = new byte[3_000_000];
                new Random(5).nextBytes(bytes);
                Path sample = data.resolve("sample.bin");
                Files.write(sample, bytes);
                assertThat(Files.readAllBytes(sample)).isEqualTo(bytes);
                assertThat(Files.size(sample)).isEqualTo(bytes.length);
                assertThat(Files.isRegularFile(sample)).isTrue();
                assertThat(Files.isDirectory(data)).isTrue();

                Files.writeString(data.resolve("labels.txt"), "cat\n");
                Files.writeString(data.resolve("labels.txt"), "dog\n", StandardOpenOption.APPEND);
                assertThat(Files.readAllLines(data.resolve("labels.txt"))).containsExactly("cat", "dog");

                try (SeekableByteChannel channel = Files.newByteChannel(sample, StandardOpenOption.READ)) {
                    channel.position(1_000_000);
                    ByteBuffer buffer = ByteBuffer.allocate(10);
                    channel.read(buffer);
                    assertThat(buffer.array()).isEqualTo(java.util.Arrays.copyOfRange(bytes, 1_000_000, 1_000_010));
                }

                try (Stream<Path> walk = Files.walk(root)) {
                    List<String> all = walk.map(Path::toString).sorted().toList();
                    assertThat(all).containsExactly("/", "/datasets", "/datasets/shard-0", "/datasets/shard-0/labels.txt",
                            "/datasets/shard-0/sample.bin");
                }

                Files.copy(sample, root.resolve("copy.bin"));
                assertThat(Files.readAllBytes(root.resolve("copy.bin"))).isEqualTo(bytes);
                assertThatThrownBy(() -> Files.copy(sample, root.resolve("copy.bin"))).isInstanceOf(FileAlreadyExistsException.class);
                Files.move(root.resolve("copy.bin"), root.resolve("moved.bin"));
                assertThat(Files.exists(root.resolve("copy.bin"))).isFalse();
                assertThatThrownBy(() -> Files.move(root.resolve("moved.bin"), sample)).isInstanceOf(FileAlreadyExistsException.class);
                Files.move(root.resolve("moved.bin"), sample, StandardCopyOption.REPLACE_EXISTING);

                assertThatThrownBy(() -> Files.delete(root.resolve("datasets"))).isInstanceOf(DirectoryNotEmptyException.class);
                assertThatThrownBy(() -> Files.readAllBytes(root.resolve("missing"))).isInstanceOf(NoSuchFileException.class);
                assertThatThrownBy(() -> Files.createFile(sample)).isInstanceOf(FileAlreadyExistsException.class);

                Files.setPosixFilePermissions(sample, PosixFilePermissions.fromString("rw-r-----"));
                assertThat(PosixFilePermissions.toString(Files.getPosixFilePermissions(sample))).isEqualTo("rw-r-----");
                Files.createSymbolicLink(root.resolve("link"), sample);
                assertThat(Files.isSymbolicLink(root.resolve("link"))).isTrue();
                assertThat(Files.readAllBytes(root.resolve("link"))).isEqualTo(bytes);
                assertThat(Files.isSameFile(root.resolve("link"), sample)).isTrue();
                assertThat(sample.toUri().toString()).isEqualTo("plinth://" + cluster.server().rpcAddress() + "/datasets/shard-0/sample.bin");
                assertThat(Files.getFileStore(sample).getTotalSpace()).isPositive();
            }
        }
    }
}
