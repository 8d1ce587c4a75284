package dev.plinth.checkpoint;

import static dev.plinth.wire.messages.HsmMessages.ARCHIVE;
import static dev.plinth.wire.messages.HsmMessages.ARCHIVED;
import static dev.plinth.wire.messages.HsmMessages.DIRTY;
import static dev.plinth.wire.messages.HsmMessages.RELEASE;
import static dev.plinth.wire.messages.HsmMessages.RELEASED;
import static dev.plinth.wire.messages.HsmMessages.RESTORE;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.HsmMessages;
import dev.plinth.wire.messages.HsmMessages.HsmState;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * A checkpoint destination on Plinth: {@code DEST/step-N} complete steps (each with its
 * {@link CheckpointNames#MARKER} and one manifest per rank) and {@code DEST/.step-N.partial}
 * steps being uploaded. Everything here is idempotent, so that an agent restarted at any point, or
 * several agents (one per node) working on the same step, end in the same state.
 */
public final class PlinthCheckpoints {
    static final int IO_BYTES = 8 << 20;

    private final PlinthClient plinth;
    private final String dest;

    public PlinthCheckpoints(PlinthClient plinth, String dest) {
        this.plinth = plinth;
        String trimmed = dest.replaceAll("/+$", "");
        this.dest = trimmed.isEmpty() ? "/" : trimmed;
        if (!this.dest.startsWith("/")) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "checkpoint destination must be an absolute path in the cluster: " + dest);
        }
    }

    public String dest() {
        return dest;
    }

    public PlinthClient client() {
        return plinth;
    }

    String path(String name) {
        return dest.equals("/") ? "/" + name : dest + "/" + name;
    }

    /** A step on Plinth: complete ones have their marker; partial ones are being uploaded. */
    public record StoredStep(long step, boolean complete, String path, StepMarker marker) {}

    /** A file of a complete step: its path on Plinth, its manifest entry, and its attributes. */
    public record StoredFile(String path, int rank, RankManifest.FileEntry entry, Attributes attributes) {
        public int hsmStates() {
            return HsmMessages.states(attributes);
        }

        public boolean released() {
            return (hsmStates() & RELEASED) != 0;
        }

        public boolean archived() {
            return (hsmStates() & ARCHIVED) != 0 && (hsmStates() & DIRTY) == 0;
        }
    }

    /** Complete and partial steps, by step; a {@code step-N} directory without a readable marker is not listed as complete. */
    public List<StoredStep> steps() {
        if (!plinth.exists(dest)) {
            return List.of();
        }
        List<StoredStep> steps = new ArrayList<>();
        for (PlinthClient.Listed listed : plinth.listWithAttributes(dest)) {
            String name = listed.entry().name();
            if (!listed.attributes().isDirectory()) {
                continue;
            }
            OptionalLong complete = CheckpointNames.parseStep(name);
            OptionalLong partial = CheckpointNames.parsePartial(name);
            if (complete.isPresent()) {
                StepMarker marker = marker(path(name));
                steps.add(new StoredStep(complete.getAsLong(), marker != null, path(name), marker));
            } else if (partial.isPresent()) {
                steps.add(new StoredStep(partial.getAsLong(), false, path(name), null));
            }
        }
        steps.sort(Comparator.comparingLong(StoredStep::step).thenComparing(StoredStep::complete));
        return steps;
    }

    public List<StoredStep> completeSteps() {
        return steps().stream().filter(StoredStep::complete).toList();
    }

    /** The newest complete step before {@code step} (what unchanged files are linked to), or null. */
    public StoredStep completeStepBefore(long step) {
        return completeSteps().stream().filter(stored -> stored.step() < step).reduce((first, second) -> second).orElse(null);
    }

    public StoredStep completeStep(long step) {
        String path = path(CheckpointNames.step(step));
        StepMarker marker = plinth.exists(path) ? marker(path) : null;
        return marker == null ? null : new StoredStep(step, true, path, marker);
    }

    private StepMarker marker(String stepPath) {
        try {
            return StepMarker.parse(readText(stepPath + "/" + CheckpointNames.MARKER));
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.INVALID_ARGUMENT) {
                return null;
            }
            throw e;
        }
    }

    /** The manifests of a step directory (complete or partial), by rank: only committed ranks. */
    public List<RankManifest> manifests(String stepPath) {
        String single = stepPath + "/" + CheckpointNames.MANIFEST;
        if (plinth.exists(single)) {
            return List.of(RankManifest.parse(readText(single)));
        }
        List<RankManifest> manifests = new ArrayList<>();
        for (PlinthClient.Listed listed : plinth.listWithAttributes(stepPath)) {
            OptionalInt rank = CheckpointNames.parseRank(listed.entry().name());
            String manifest = stepPath + "/" + listed.entry().name() + "/" + CheckpointNames.MANIFEST;
            if (rank.isPresent() && listed.attributes().isDirectory() && plinth.exists(manifest)) {
                manifests.add(RankManifest.parse(readText(manifest)));
            }
        }
        manifests.sort(Comparator.comparingInt(RankManifest::rank));
        return manifests;
    }

    static String partDirectory(String stepPath, RankManifest manifest) {
        return manifest.singleRank() ? stepPath : stepPath + "/" + CheckpointNames.rank(manifest.rank());
    }

    /** Every file of a complete step, with its attributes (hard links to an earlier step's files included). */
    public List<StoredFile> files(StoredStep step) {
        return files(step, manifests(step.path()));
    }

    /** The files {@code manifests} (of this step, already read) list, with their attributes. */
    public List<StoredFile> files(StoredStep step, List<RankManifest> manifests) {
        List<StoredFile> files = new ArrayList<>();
        for (RankManifest manifest : manifests) {
            String directory = partDirectory(step.path(), manifest);
            for (RankManifest.FileEntry entry : manifest.files()) {
                String path = directory + "/" + entry.path();
                files.add(new StoredFile(path, manifest.rank(), entry, plinth.stat(path)));
            }
        }
        return files;
    }

    // ---- upload

    /** How a part was uploaded: bytes written, bytes linked from the previous step, files re-verified after a restart. */
    public record UploadResult(long writtenBytes, long linkedBytes, long reusedBytes, int files) {}

    /**
     * Uploads one committed local rank into the step's partial directory and commits the rank
     * there. Files are written unnamed and named once complete and durable; a file equal (size and
     * CRC32C) to the same file of {@code previous} is hard-linked to it instead of written; a file
     * already uploaded by an earlier, interrupted run is read back and kept if it matches.
     * {@code parallel} files are written at once; {@code beforeBlock} runs before each block is
     * read (the agent pauses there while a trainer writes). Returns when the rank is committed on Plinth.
     */
    public UploadResult upload(LocalStaging.Part part, StoredStep previous, int parallel, LongConsumer progress, Runnable beforeBlock)
            throws IOException {
        String partial = path(CheckpointNames.partial(part.step()));
        ensureDirectory(partial);
        boolean single = part.worldSize() == 1;
        String committedRank = single ? partial : partial + "/" + CheckpointNames.rank(part.rank());
        if (uploaded(part)) {
            return new UploadResult(0, 0, 0, 0);
        }
        String work = single ? partial : partial + "/" + CheckpointNames.rank(part.rank()) + CheckpointNames.TMP_SUFFIX;
        ensureDirectory(work);
        Map<String, RankManifest.FileEntry> earlier = previousFiles(previous, part);
        String earlierDirectory = earlierDirectory(previous, part);

        AtomicLong written = new AtomicLong();
        AtomicLong linked = new AtomicLong();
        AtomicLong reused = new AtomicLong();
        List<RankManifest.FileEntry> uploaded = parallelMap(part.manifest().files(), parallel, entry -> {
            Path local = part.directory().resolve(entry.path());
            String target = work + "/" + entry.path();
            ensureParents(work, entry.path());
            long localSize = Files.size(local);
            if (localSize != entry.size()) {
                throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH,
                        local + " is " + localSize + " bytes, its manifest says " + entry.size() + ": the staged step changed after its commit");
            }
            Long crc = entry.crc32c();
            // left by an interrupted upload: kept only if it reads back equal
            if (plinth.exists(target)) {
                Attributes existing = plinth.lstat(target);
                if (existing.sizeBytes() == entry.size()) {
                    long known = crc != null ? crc : LocalStaging.crc32c(local);
                    if (crc32c(target) == known) {
                        reused.addAndGet(entry.size());
                        progress.accept(entry.size());
                        return new RankManifest.FileEntry(entry.path(), entry.size(), known);
                    }
                }
                plinth.delete(target);
            }
            RankManifest.FileEntry before = earlier.get(entry.path());
            if (before != null && before.size() == entry.size() && before.crc32c() != null) {
                long known = crc != null ? crc : LocalStaging.crc32c(local);
                if (known == before.crc32c() && link(earlierDirectory + "/" + entry.path(), target)) {
                    linked.addAndGet(entry.size());
                    progress.accept(entry.size());
                    return new RankManifest.FileEntry(entry.path(), entry.size(), known);
                }
            }
            long sent = writeFile(local, target, progress, beforeBlock);
            if (crc != null && sent != crc) {
                plinth.delete(target);
                throw LocalStaging.mismatch(local + ": CRC32C " + hex(sent) + ", its manifest says " + hex(crc)
                        + ": the staged copy is not what the trainer committed");
            }
            written.addAndGet(entry.size());
            return new RankManifest.FileEntry(entry.path(), entry.size(), sent);
        });
        RankManifest onPlinth = new RankManifest(part.step(), part.rank(), part.worldSize(), uploaded);
        writeText(work + "/" + CheckpointNames.MANIFEST, onPlinth.toJson(), false);
        if (!single) {
            try {
                plinth.rename(work, committedRank);
            } catch (PlinthException e) {
                if (!plinth.exists(committedRank)) {
                    throw e;
                }
            }
        }
        return new UploadResult(written.get(), linked.get(), reused.get(), uploaded.size());
    }

    /** Whether the part is committed in its step's partial directory (or the step is complete). */
    public boolean uploaded(LocalStaging.Part part) {
        String partial = path(CheckpointNames.partial(part.step()));
        return part.worldSize() == 1 ? plinth.exists(partial + "/" + CheckpointNames.MANIFEST)
                : plinth.exists(partial + "/" + CheckpointNames.rank(part.rank()));
    }

    private Map<String, RankManifest.FileEntry> previousFiles(StoredStep previous, LocalStaging.Part part) {
        if (previous == null) {
            return Map.of();
        }
        try {
            for (RankManifest manifest : manifests(previous.path())) {
                if (manifest.rank() == part.rank() && manifest.worldSize() == part.worldSize()) {
                    return manifest.byPath();
                }
            }
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.NOT_FOUND) { // removed meanwhile: nothing to share
                throw e;
            }
        }
        return Map.of();
    }

    private static String earlierDirectory(StoredStep previous, LocalStaging.Part part) {
        if (previous == null) {
            return null;
        }
        return part.worldSize() == 1 ? previous.path() : previous.path() + "/" + CheckpointNames.rank(part.rank());
    }

    private boolean link(String existing, String target) {
        try {
            plinth.link(existing, target);
            return true;
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.TOO_MANY_LINKS) {
                return false; // the earlier step went meanwhile, or the file has all the links it may: write it
            }
            throw e;
        }
    }

    /** Writes a local file to Plinth unnamed, makes it durable, then names it; returns the CRC32C of what was sent. */
    private long writeFile(Path local, String target, LongConsumer progress, Runnable beforeBlock) throws IOException {
        Attributes directory = plinth.stat(dev.plinth.common.Names.parent(target));
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        try (FileChannel in = FileChannel.open(local, StandardOpenOption.READ);
             PlinthFile file = plinth.createUnnamed(directory.inodeId(), 0644, null)) {
            ByteBuffer buffer = ByteBuffer.allocate(IO_BYTES);
            long offset = 0;
            while (true) {
                beforeBlock.run();
                buffer.clear();
                int read = in.read(buffer);
                if (read < 0) {
                    break;
                }
                buffer.flip();
                crc.update(buffer.duplicate());
                file.write(offset, buffer);
                offset += read;
                progress.accept(read);
                dev.plinth.common.FaultPoints.delay(dev.plinth.common.FaultPoints.CHECKPOINT_BLOCK_DELAY_MILLIS);
            }
            file.fsync();
            file.publish(directory.inodeId(), null, dev.plinth.common.Names.lastName(target), false,
                    Files.getLastModifiedTime(local).toMillis() * 1_000_000L, List.of());
        }
        return crc.getValue();
    }

    /**
     * Completes the step if every rank is committed in its partial directory: writes the marker
     * (whoever writes it first decides its sequence) and renames the directory to the step's name.
     * Returns the complete step, or null while ranks are missing.
     */
    public StoredStep tryComplete(long step, int archiveEvery) {
        StoredStep done = completeStep(step);
        if (done != null) {
            return done;
        }
        String partial = path(CheckpointNames.partial(step));
        if (!plinth.exists(partial)) {
            return null;
        }
        List<RankManifest> manifests = manifests(partial);
        if (manifests.isEmpty()) {
            return null;
        }
        int worldSize = manifests.getFirst().worldSize();
        for (RankManifest manifest : manifests) {
            if (manifest.worldSize() != worldSize || manifest.step() != step) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, partial + ": ranks disagree on the step or world_size ("
                        + manifest.step() + ", " + manifest.worldSize() + " against " + step + ", " + worldSize + ")");
            }
        }
        if (manifests.size() < worldSize) {
            return null;
        }
        long sequence = 1 + completeSteps().stream().mapToLong(s -> s.marker().sequence()).max().orElse(0);
        long files = manifests.stream().mapToLong(m -> m.files().size()).sum();
        long bytes = manifests.stream().mapToLong(RankManifest::bytes).sum();
        StepMarker marker = new StepMarker(step, worldSize, sequence, archiveEvery > 0 && sequence % archiveEvery == 0, files, bytes,
                System.currentTimeMillis());
        try {
            writeText(partial + "/" + CheckpointNames.MARKER, marker.toJson(), true);
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.ALREADY_EXISTS) {
                throw e;
            }
        }
        String complete = path(CheckpointNames.step(step));
        try {
            Attributes parent = plinth.stat(dest);
            plinth.rename(parent.inodeId(), CheckpointNames.partial(step), parent.inodeId(), CheckpointNames.step(step), true);
        } catch (PlinthException e) {
            if (completeStep(step) == null) { // another agent completed it first: fine
                throw new PlinthException(e.code(), "completing " + complete + ": " + e.detail(), e);
            }
        }
        return completeStep(step);
    }

    // ---- tiers

    /** Asks HSM to archive every file of the step not archived yet; returns how many are still to be archived. */
    public int requestArchive(StoredStep step, int archiveId) {
        int pending = 0;
        for (StoredFile file : files(step)) {
            if (!file.archived()) {
                pending++;
                plinth.hsm().request(file.attributes().inodeId(), ARCHIVE, archiveId);
            }
        }
        return pending;
    }

    public boolean archived(StoredStep step) {
        return files(step).stream().allMatch(StoredFile::archived);
    }

    /**
     * Frees the hot copy of the step's files (HSM release), except files whose inode a kept step
     * shares (a hard link made when the file did not change): those bytes are still in use.
     * Returns how many files were released.
     */
    public int release(StoredStep step, Set<Long> keptInodes) {
        int released = 0;
        for (StoredFile file : files(step)) {
            if (!file.released() && !keptInodes.contains(file.attributes().inodeId()) && file.archived()) {
                HsmState state = plinth.hsm().request(file.attributes().inodeId(), RELEASE, 0);
                if ((state.states() & RELEASED) != 0) {
                    released++;
                }
            }
        }
        return released;
    }

    public Set<Long> inodes(List<StoredStep> steps) {
        Set<Long> inodes = new HashSet<>();
        for (StoredStep step : steps) {
            files(step).forEach(file -> inodes.add(file.attributes().inodeId()));
        }
        return inodes;
    }

    /** Removes a step from Plinth entirely: renamed out of the listing first, so a half-removed step is never complete. */
    public void remove(long step) {
        String complete = path(CheckpointNames.step(step));
        String doomed = path(".removing-" + CheckpointNames.step(step));
        if (plinth.exists(complete)) {
            if (plinth.exists(doomed)) {
                deleteTree(doomed);
            }
            plinth.rename(complete, doomed);
        }
        String partial = path(CheckpointNames.partial(step));
        if (plinth.exists(partial)) {
            deleteTree(partial);
        }
        if (plinth.exists(doomed)) {
            deleteTree(doomed);
        }
    }

    private void deleteTree(String path) {
        Attributes attributes = plinth.lstat(path);
        if (attributes.isDirectory()) {
            for (PlinthClient.Listed listed : plinth.listWithAttributes(path)) {
                deleteTree(path + "/" + listed.entry().name());
            }
        }
        try {
            plinth.delete(path);
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.NOT_FOUND) {
                throw e;
            }
        }
    }

    // ---- reading back

    /** Brings a step's released files back from the cold tier; waits for them (up to {@code timeoutMillis}). */
    public void restoreFromCold(List<StoredFile> files, long timeoutMillis, LongConsumer progress) throws InterruptedException {
        List<StoredFile> released = files.stream().filter(StoredFile::released).toList();
        for (StoredFile file : released) {
            plinth.hsm().request(file.attributes().inodeId(), RESTORE, 0);
        }
        long deadline = System.nanoTime() + timeoutMillis * 1_000_000L;
        for (StoredFile file : released) {
            while (true) {
                HsmState state = plinth.hsm().state(file.attributes().inodeId());
                if ((state.states() & RELEASED) == 0) {
                    progress.accept(file.entry().size());
                    break;
                }
                if (state.action() == null) {
                    throw new PlinthException(ErrorCode.ARCHIVE_UNREADABLE, file.path() + ": restore from the cold tier failed"
                            + (state.lastError() == null ? "" : ": " + state.lastError()));
                }
                if (System.nanoTime() > deadline) {
                    throw new PlinthException(ErrorCode.RESTORE_PENDING, file.path() + ": still being restored after "
                            + timeoutMillis / 1000 + " s");
                }
                Thread.sleep(50);
            }
        }
    }

    /** CRC32C of a file's bytes on Plinth (the targets check each 64 KiB block's own CRC as they are read). */
    public long crc32c(String path) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        copyOut(path, buffer -> crc.update(buffer), ignored -> {});
        return crc.getValue();
    }

    private void copyOut(String path, PlinthFile.BlockSink sink, LongConsumer progress) {
        try (PlinthFile file = plinth.open(path, false)) {
            file.readAll(IO_BYTES, block -> {
                int length = block.remaining();
                sink.accept(block);
                progress.accept(length);
            });
        } catch (IOException e) {
            throw LocalStaging.unchecked(e);
        }
    }

    /**
     * Copies a file from Plinth to a local path, checking its CRC32C against {@code expected}:
     * written under a temporary name, made durable, and renamed only if it matched.
     */
    public void copyTo(String path, Path local, long expected, LongConsumer progress) throws IOException {
        Files.createDirectories(local.getParent());
        Path temporary = local.resolveSibling(local.getFileName() + ".restoring");
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        try (FileChannel out = FileChannel.open(temporary, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            copyOut(path, buffer -> {
                crc.update(buffer.duplicate());
                while (buffer.hasRemaining()) {
                    out.write(buffer);
                }
            }, progress);
            out.force(true);
        }
        if (crc.getValue() != expected) {
            Files.deleteIfExists(temporary);
            throw LocalStaging.mismatch(path + ": CRC32C " + hex(crc.getValue()) + ", its manifest says " + hex(expected));
        }
        Files.move(temporary, local, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    public String readText(String path) {
        java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
        copyOut(path, buffer -> bytes.write(buffer.array(), buffer.arrayOffset() + buffer.position(), buffer.remaining()), ignored -> {});
        return bytes.toString(StandardCharsets.UTF_8);
    }

    /** Writes a small file durably and names it at once; {@code exclusive} fails with ALREADY_EXISTS if the name is taken. */
    void writeText(String path, String text, boolean exclusive) {
        Attributes directory = plinth.stat(dev.plinth.common.Names.parent(path));
        try (PlinthFile file = plinth.createUnnamed(directory.inodeId(), 0644, null)) {
            file.write(0, ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
            file.fsync();
            file.publish(directory.inodeId(), null, dev.plinth.common.Names.lastName(path), exclusive,
                    System.currentTimeMillis() * 1_000_000L, List.of());
        }
    }

    private void ensureDirectory(String path) {
        try {
            plinth.mkdir(path, 0755);
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.ALREADY_EXISTS) {
                throw e;
            }
        }
    }

    private void ensureParents(String base, String relative) {
        int slash = relative.lastIndexOf('/');
        if (slash > 0) {
            plinth.mkdirs(base + "/" + relative.substring(0, slash), 0755);
        }
    }

    static String hex(long crc) {
        return String.format("%08x", crc);
    }

    interface FileTask<T> {
        T apply(RankManifest.FileEntry entry) throws IOException, InterruptedException;
    }

    /** Runs the task for each entry, {@code parallel} at a time; results in the entries' order; the first failure is thrown. */
    static <T> List<T> parallelMap(List<RankManifest.FileEntry> entries, int parallel, FileTask<T> task) throws IOException {
        List<T> results = new ArrayList<>();
        if (parallel <= 1 || entries.size() <= 1) {
            for (RankManifest.FileEntry entry : entries) {
                results.add(call(task, entry));
            }
            return results;
        }
        try (var pool = java.util.concurrent.Executors.newFixedThreadPool(Math.min(parallel, entries.size()),
                Thread.ofPlatform().daemon().name("checkpoint-io-", 0).factory())) {
            List<java.util.concurrent.Future<T>> futures = new ArrayList<>();
            for (RankManifest.FileEntry entry : entries) {
                futures.add(pool.submit(() -> call(task, entry)));
            }
            results.addAll(dev.plinth.common.Futures.awaitAll(futures));
        }
        return results;
    }

    private static <T> T call(FileTask<T> task, RankManifest.FileEntry entry) throws IOException {
        try {
            return task.apply(entry);
        } catch (IOException | RuntimeException e) {
            throw e;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PlinthException(ErrorCode.INTERRUPTED, "interrupted");
        } catch (Exception e) {
            throw new IOException(e);
        }
    }
}
