package dev.plinth.checkpoint;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileTrees;
import dev.plinth.common.PlinthException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.stream.Stream;

/**
 * The trainer's staging directory (fast local disk): committed steps and ranks, the commit itself
 * for Java writers, and the agent's markers of what is durable on Plinth ({@code .durable/step-N},
 * so that a trainer can wait for a step without asking the cluster).
 */
public final class LocalStaging {
    private static final String DURABLE = ".durable";
    private static final int IO_BYTES = 8 << 20;

    private final Path root;

    public LocalStaging(Path root) {
        this.root = root;
    }

    public Path root() {
        return root;
    }

    /** One committed rank of a step: its files are {@code directory}/path for each path in the manifest. */
    public record Part(long step, int rank, int worldSize, Path directory, RankManifest manifest) {}

    /** The directory a writer fills before {@link #commit}: {@code step-N.tmp}, or {@code step-N/rank-R.tmp} with several ranks. */
    public Path uncommitted(long step, int rank, int worldSize) {
        return worldSize == 1 ? root.resolve(CheckpointNames.step(step) + CheckpointNames.TMP_SUFFIX)
                : root.resolve(CheckpointNames.step(step)).resolve(CheckpointNames.rank(rank) + CheckpointNames.TMP_SUFFIX);
    }

    /**
     * Removes what this rank's writer left of steps before {@code step} that it never committed (a
     * writer killed, or refused by a full disk): a writer that begins step N will not finish an
     * earlier one, and on a small staging disk those leftovers are what keeps the next step out.
     */
    public void removeAbandoned(long step, int rank, int worldSize) throws IOException {
        for (Path child : children(root)) {
            String name = child.getFileName().toString();
            OptionalLong uncommitted = CheckpointNames.parseUncommittedStep(name);
            if (worldSize == 1 && uncommitted.isPresent() && uncommitted.getAsLong() < step) {
                FileTrees.delete(child);
            }
            OptionalLong earlier = CheckpointNames.parseStep(name);
            if (worldSize > 1 && earlier.isPresent() && earlier.getAsLong() < step) {
                FileTrees.delete(child.resolve(CheckpointNames.rank(rank) + CheckpointNames.TMP_SUFFIX));
            }
        }
    }

    public Path committed(long step, int rank, int worldSize) {
        return worldSize == 1 ? root.resolve(CheckpointNames.step(step))
                : root.resolve(CheckpointNames.step(step)).resolve(CheckpointNames.rank(rank));
    }

    /**
     * Commits what a writer put in {@link #uncommitted}: lists every file with its size and CRC32C
     * into the manifest, makes files, manifest and directories durable, and renames the directory
     * to its committed name. Until the rename the step is not complete, whatever else happened.
     */
    public RankManifest commit(long step, int rank, int worldSize) throws IOException {
        Path directory = uncommitted(step, rank, worldSize);
        if (!Files.isDirectory(directory)) {
            throw new NoSuchFileException(directory.toString(), null, "nothing to commit");
        }
        List<RankManifest.FileEntry> files = new ArrayList<>();
        try (Stream<Path> walk = Files.walk(directory)) {
            for (Path file : walk.filter(Files::isRegularFile).sorted().toList()) {
                String path = relative(directory, file);
                if (path.equals(CheckpointNames.MANIFEST)) {
                    continue;
                }
                files.add(new RankManifest.FileEntry(path, Files.size(file), crc32c(file)));
                fsync(file);
            }
        }
        RankManifest manifest = new RankManifest(step, rank, worldSize, files);
        writeDurably(directory.resolve(CheckpointNames.MANIFEST), manifest.toJson());
        try (Stream<Path> walk = Files.walk(directory)) {
            for (Path sub : walk.filter(Files::isDirectory).toList()) {
                fsync(sub);
            }
        }
        Path target = committed(step, rank, worldSize);
        if (Files.exists(target)) {
            throw new FileAlreadyExistsException(target.toString(), null, "step already committed; a committed step never changes");
        }
        try {
            Files.move(directory, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            throw new IOException("staging directory must allow an atomic rename: " + e.getMessage(), e);
        }
        fsync(target.getParent());
        return manifest;
    }

    /** Every committed rank under the staging directory, by step then rank; unreadable manifests are skipped and reported. */
    public List<Part> committedParts(List<String> problems) throws IOException {
        List<Part> parts = new ArrayList<>();
        for (Path stepDirectory : children(root)) {
            OptionalLong step = CheckpointNames.parseStep(stepDirectory.getFileName().toString());
            if (step.isEmpty() || !Files.isDirectory(stepDirectory)) {
                continue;
            }
            Path single = stepDirectory.resolve(CheckpointNames.MANIFEST);
            if (Files.exists(single)) {
                addPart(parts, problems, step.getAsLong(), stepDirectory);
                continue;
            }
            for (Path rankDirectory : children(stepDirectory)) {
                OptionalInt rank = CheckpointNames.parseRank(rankDirectory.getFileName().toString());
                if (rank.isPresent() && Files.exists(rankDirectory.resolve(CheckpointNames.MANIFEST))) {
                    addPart(parts, problems, step.getAsLong(), rankDirectory);
                }
            }
        }
        parts.sort(Comparator.comparingLong(Part::step).thenComparingInt(Part::rank));
        return parts;
    }

    private static void addPart(List<Part> parts, List<String> problems, long step, Path directory) {
        try {
            RankManifest manifest = RankManifest.parse(Files.readString(directory.resolve(CheckpointNames.MANIFEST)));
            if (manifest.step() != step) {
                problems.add(directory + ": manifest says step " + manifest.step());
                return;
            }
            parts.add(new Part(step, manifest.rank(), manifest.worldSize(), directory, manifest));
        } catch (IOException | PlinthException e) {
            problems.add(directory + ": " + e.getMessage());
        }
    }

    /** Steps with a directory still being written ({@code .tmp}) and nothing committed for it. */
    public List<Long> uncommittedSteps() throws IOException {
        List<Long> steps = new ArrayList<>();
        for (Path child : children(root)) {
            String name = child.getFileName().toString();
            OptionalLong tmp = CheckpointNames.parseUncommittedStep(name);
            if (tmp.isPresent()) {
                steps.add(tmp.getAsLong());
            }
            OptionalLong step = CheckpointNames.parseStep(name);
            if (step.isPresent() && Files.isDirectory(child)) {
                for (Path rank : children(child)) {
                    if (rank.getFileName().toString().endsWith(CheckpointNames.TMP_SUFFIX)) {
                        steps.add(step.getAsLong());
                        break;
                    }
                }
            }
        }
        return steps.stream().distinct().sorted().toList();
    }

    /**
     * Whether a trainer is writing a step now: some uncommitted directory, or a file in it, changed
     * within the last {@code recentMillis}. A directory left by a writer that died stops counting
     * once it has been still that long.
     */
    public boolean beingWritten(long recentMillis) throws IOException {
        long since = System.currentTimeMillis() - recentMillis;
        for (Path child : children(root)) {
            String name = child.getFileName().toString();
            if (CheckpointNames.parseUncommittedStep(name).isPresent() && changedSince(child, since)) {
                return true;
            }
            if (CheckpointNames.parseStep(name).isPresent() && Files.isDirectory(child)) {
                for (Path rank : children(child)) {
                    if (rank.getFileName().toString().endsWith(CheckpointNames.TMP_SUFFIX) && changedSince(rank, since)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    private static boolean changedSince(Path directory, long sinceMillis) throws IOException {
        try (Stream<Path> walk = Files.walk(directory, 4)) {
            return walk.anyMatch(path -> {
                try {
                    return Files.getLastModifiedTime(path).toMillis() >= sinceMillis;
                } catch (IOException e) {
                    return false; // gone meanwhile (committed, removed)
                }
            });
        } catch (NoSuchFileException | java.io.UncheckedIOException e) {
            return false;
        }
    }

    public boolean durable(long step) {
        return Files.exists(root.resolve(DURABLE).resolve(CheckpointNames.step(step)));
    }

    /** Notes that the step is complete on Plinth (what {@code wait_durable} waits for). */
    public void markDurable(long step) throws IOException {
        Path markers = Files.createDirectories(root.resolve(DURABLE));
        Path marker = markers.resolve(CheckpointNames.step(step));
        if (!Files.exists(marker)) {
            Path temporary = markers.resolve(CheckpointNames.step(step) + CheckpointNames.TMP_SUFFIX);
            writeDurably(temporary, "");
            Files.move(temporary, marker, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            fsync(markers);
        }
    }

    /** Removes a step's local copy (its durable marker stays, so a trainer still learns the step is safe). */
    public void remove(long step) throws IOException {
        Path directory = root.resolve(CheckpointNames.step(step));
        if (!Files.exists(directory)) {
            return;
        }
        // renamed away first, so that a half-removed step is never seen as committed
        Path doomed = root.resolve(".removing-" + CheckpointNames.step(step));
        Files.move(directory, doomed, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        FileTrees.delete(doomed);
    }

    /** Leftovers of {@link #remove} cut short. */
    public void removeLeftovers() throws IOException {
        for (Path child : children(root)) {
            if (child.getFileName().toString().startsWith(".removing-")) {
                FileTrees.delete(child);
            }
        }
    }

    static List<Path> children(Path directory) throws IOException {
        if (!Files.isDirectory(directory)) {
            return List.of();
        }
        List<Path> children = new ArrayList<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(directory)) {
            stream.forEach(children::add);
        }
        children.sort(Comparator.naturalOrder());
        return children;
    }

    static String relative(Path directory, Path file) {
        return directory.relativize(file).toString().replace(java.io.File.separatorChar, '/');
    }

    /** CRC32C of a local file's bytes. */
    public static long crc32c(Path file) throws IOException {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(IO_BYTES);
            while (channel.read(buffer.clear()) > 0) {
                crc.update(buffer.flip());
            }
        }
        return crc.getValue();
    }

    static void writeDurably(Path file, String text) throws IOException {
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer bytes = ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8));
            while (bytes.hasRemaining()) {
                channel.write(bytes);
            }
            channel.force(true);
        }
    }

    static void fsync(Path path) throws IOException {
        // a directory opens read-only and forces like a file on Linux; that is what makes a rename durable
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException e) {
            if (!Files.isDirectory(path)) {
                throw e;
            }
        }
    }

    static UncheckedIOException unchecked(IOException e) {
        return new UncheckedIOException(e);
    }

    static PlinthException mismatch(String what) {
        return new PlinthException(ErrorCode.CHECKSUM_MISMATCH, what);
    }
}
