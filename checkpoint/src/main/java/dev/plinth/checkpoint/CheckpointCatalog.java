package dev.plinth.checkpoint;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.LongConsumer;

/**
 * What checkpoints exist and where (local staging, Plinth's hot tier, the cold tier), and getting
 * one back: {@link #list}, {@link #restore}, {@link #verify}. A step counts as complete only when
 * committed as the protocol says: renamed with its marker on Plinth, or every rank committed in
 * the staging directory.
 */
public final class CheckpointCatalog {
    private final PlinthCheckpoints store;
    private final LocalStaging staging;

    /** {@code staging} may be null: then only Plinth's tiers are looked at. */
    public CheckpointCatalog(PlinthCheckpoints store, LocalStaging staging) {
        this.store = store;
        this.staging = staging;
    }

    /**
     * One step as {@code checkpoint list} shows it. {@code state} is complete or incomplete;
     * {@code tiers} are where a complete copy is (local: every rank in this staging directory; hot:
     * on Plinth with no file released; cold: every file archived); {@code durable} says the step is
     * complete on Plinth; {@code uploading} that a partial upload is there.
     */
    public record Entry(long step, String state, List<String> tiers, boolean durable, boolean uploading, int worldSize,
                        List<Integer> localRanks, long files, long bytes) {
        public Map<String, Object> toMap() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("step", step);
            out.put("state", state);
            out.put("tiers", tiers);
            out.put("durable", durable);
            out.put("uploading", uploading);
            out.put("world_size", worldSize);
            out.put("local_ranks", localRanks);
            out.put("files", files);
            out.put("bytes", bytes);
            return out;
        }
    }

    public List<Entry> list() throws IOException {
        return entries(true);
    }

    /** {@code withTiers} false leaves {@code tiers} without hot and cold: those stat every file of every step on Plinth. */
    private List<Entry> entries(boolean withTiers) throws IOException {
        Map<Long, PlinthCheckpoints.StoredStep> complete = new HashMap<>();
        TreeSet<Long> partial = new TreeSet<>();
        for (PlinthCheckpoints.StoredStep step : store.steps()) {
            if (step.complete()) {
                complete.put(step.step(), step);
            } else {
                partial.add(step.step());
            }
        }
        Map<Long, List<LocalStaging.Part>> local = localParts();
        TreeSet<Long> uncommitted = new TreeSet<>(staging == null ? List.of() : staging.uncommittedSteps());
        TreeSet<Long> all = new TreeSet<>(complete.keySet());
        all.addAll(partial);
        all.addAll(local.keySet());
        all.addAll(uncommitted);
        List<Entry> entries = new ArrayList<>();
        for (long step : all) {
            List<String> tiers = new ArrayList<>();
            List<LocalStaging.Part> parts = local.getOrDefault(step, List.of());
            int worldSize = parts.isEmpty() ? 0 : parts.getFirst().worldSize();
            long files = parts.stream().mapToLong(p -> p.manifest().files().size()).sum();
            long bytes = parts.stream().mapToLong(p -> p.manifest().bytes()).sum();
            boolean localComplete = !parts.isEmpty() && parts.size() == worldSize;
            if (localComplete) {
                tiers.add("local");
            }
            PlinthCheckpoints.StoredStep stored = complete.get(step);
            if (stored != null && withTiers) {
                List<PlinthCheckpoints.StoredFile> stepFiles = store.files(stored);
                if (stepFiles.stream().noneMatch(PlinthCheckpoints.StoredFile::released)) {
                    tiers.add("hot");
                }
                if (!stepFiles.isEmpty() && stepFiles.stream().allMatch(PlinthCheckpoints.StoredFile::archived)) {
                    tiers.add("cold");
                }
            }
            if (stored != null) {
                worldSize = stored.marker().worldSize();
                files = stored.marker().files();
                bytes = stored.marker().bytes();
            }
            boolean isComplete = stored != null || localComplete;
            entries.add(new Entry(step, isComplete ? "complete" : "incomplete", tiers, stored != null, partial.contains(step), worldSize,
                    parts.stream().map(LocalStaging.Part::rank).toList(), files, bytes));
        }
        return entries;
    }

    private Map<Long, List<LocalStaging.Part>> localParts() throws IOException {
        Map<Long, List<LocalStaging.Part>> byStep = new TreeMap<>();
        if (staging != null) {
            for (LocalStaging.Part part : staging.committedParts(new ArrayList<>())) {
                byStep.computeIfAbsent(part.step(), ignored -> new ArrayList<>()).add(part);
            }
        }
        return byStep;
    }

    /** The newest complete step in any tier. */
    public long latest() throws IOException {
        return entries(false).stream().filter(entry -> entry.state().equals("complete")).mapToLong(Entry::step).max()
                .orElseThrow(() -> new PlinthException(ErrorCode.NOT_FOUND, "no complete checkpoint in " + store.dest()
                        + (staging == null ? "" : " or " + staging.root())));
    }

    /** Where a restore came from, and what it wrote. */
    public record Restored(long step, String tier, int files, long bytes) {}

    /**
     * Writes a complete step (or only {@code rank}'s part; null for all) into {@code to}, from the
     * nearest tier that has it: local staging, then Plinth (restoring released files from the cold
     * tier first). Every file's CRC32C is checked against its manifest before it takes its name;
     * a local copy that fails the check is passed over for Plinth's.
     */
    public Restored restore(long step, Integer rank, Path to, long coldTimeoutMillis, LongConsumer progress)
            throws IOException, InterruptedException {
        Entry entry = entries(false).stream().filter(e -> e.step() == step).findFirst().orElse(null);
        if (entry == null || !entry.state().equals("complete")) {
            throw new PlinthException(ErrorCode.NOT_FOUND, CheckpointNames.step(step) + " is not a complete checkpoint"
                    + (entry == null ? "" : " (" + entry.state() + ")"));
        }
        if (rank != null && (rank < 0 || rank >= entry.worldSize())) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "rank " + rank + " of a step with " + entry.worldSize() + " rank(s)");
        }
        Files.createDirectories(to);
        List<LocalStaging.Part> parts = localParts().getOrDefault(step, List.of()).stream()
                .filter(part -> rank == null || part.rank() == rank).toList();
        boolean allLocal = rank == null ? parts.size() == entry.worldSize() : parts.size() == 1;
        if (allLocal) {
            try {
                return restoreLocal(step, parts, rank, to, progress);
            } catch (PlinthException e) {
                if (!entry.durable()) {
                    throw e;
                }
                // the local copy is damaged: Plinth's is the next nearest
            }
        }
        if (!entry.durable()) {
            throw new PlinthException(ErrorCode.NOT_FOUND, CheckpointNames.step(step) + " is not on Plinth, and staging lacks a rank of it");
        }
        return restorePlinth(step, rank, to, coldTimeoutMillis, progress);
    }

    private Restored restoreLocal(long step, List<LocalStaging.Part> parts, Integer rank, Path to, LongConsumer progress) throws IOException {
        Map<Integer, RankManifest> onPlinth = new HashMap<>();
        PlinthCheckpoints.StoredStep stored = store.completeStep(step);
        if (stored != null) {
            store.manifests(stored.path()).forEach(manifest -> onPlinth.put(manifest.rank(), manifest));
        }
        int files = 0;
        long bytes = 0;
        for (LocalStaging.Part part : parts) {
            Path directory = target(to, part.manifest(), rank);
            Map<String, RankManifest.FileEntry> checked = onPlinth.containsKey(part.rank()) ? onPlinth.get(part.rank()).byPath() : Map.of();
            List<RankManifest.FileEntry> entries = new ArrayList<>();
            for (RankManifest.FileEntry file : part.manifest().files()) {
                Long expected = file.crc32c() != null ? file.crc32c()
                        : checked.containsKey(file.path()) ? checked.get(file.path()).crc32c() : null;
                long crc = copyLocal(part.directory().resolve(file.path()), directory.resolve(file.path()), expected, progress);
                entries.add(new RankManifest.FileEntry(file.path(), file.size(), crc));
                files++;
                bytes += file.size();
            }
            LocalStaging.writeDurably(directory.resolve(CheckpointNames.MANIFEST),
                    new RankManifest(step, part.rank(), part.worldSize(), entries).toJson());
        }
        return new Restored(step, "local", files, bytes);
    }

    /** Copies a staged file with its CRC32C computed in the same pass; named only if it matches {@code expected} (null: unknown). */
    private static long copyLocal(Path source, Path target, Long expected, LongConsumer progress) throws IOException {
        Files.createDirectories(target.getParent());
        Path temporary = target.resolveSibling(target.getFileName() + ".restoring");
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        try (FileChannel in = FileChannel.open(source, StandardOpenOption.READ);
             FileChannel out = FileChannel.open(temporary, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                     StandardOpenOption.TRUNCATE_EXISTING)) {
            ByteBuffer buffer = ByteBuffer.allocateDirect(PlinthCheckpoints.IO_BYTES);
            while (in.read(buffer.clear()) > 0) {
                buffer.flip();
                crc.update(buffer.duplicate());
                int length = buffer.remaining();
                while (buffer.hasRemaining()) {
                    out.write(buffer);
                }
                progress.accept(length);
            }
            out.force(true);
        }
        if (expected != null && crc.getValue() != expected) {
            Files.deleteIfExists(temporary);
            throw LocalStaging.mismatch(source + ": CRC32C " + PlinthCheckpoints.hex(crc.getValue()) + ", its manifest says "
                    + PlinthCheckpoints.hex(expected));
        }
        Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        return crc.getValue();
    }

    private Restored restorePlinth(long step, Integer rank, Path to, long coldTimeoutMillis, LongConsumer progress)
            throws IOException, InterruptedException {
        PlinthCheckpoints.StoredStep stored = store.completeStep(step);
        if (stored == null) {
            throw new PlinthException(ErrorCode.NOT_FOUND, CheckpointNames.step(step) + " is not complete on Plinth");
        }
        List<RankManifest> manifests = store.manifests(stored.path()).stream().filter(m -> rank == null || m.rank() == rank).toList();
        List<PlinthCheckpoints.StoredFile> files = store.files(stored, manifests);
        boolean cold = files.stream().anyMatch(PlinthCheckpoints.StoredFile::released);
        store.restoreFromCold(files, coldTimeoutMillis, ignored -> {});
        int count = 0;
        long bytes = 0;
        for (RankManifest manifest : manifests) {
            Path directory = target(to, manifest, rank);
            String source = PlinthCheckpoints.partDirectory(stored.path(), manifest);
            for (RankManifest.FileEntry file : manifest.files()) {
                store.copyTo(source + "/" + file.path(), directory.resolve(file.path()), file.crc32c(), progress);
                count++;
                bytes += file.size();
            }
            LocalStaging.writeDurably(directory.resolve(CheckpointNames.MANIFEST), manifest.toJson());
        }
        return new Restored(step, cold ? "cold" : "hot", count, bytes);
    }

    /** A whole multi-rank step is restored with its rank directories; one rank, or a one-rank step, straight into {@code to}. */
    private static Path target(Path to, RankManifest manifest, Integer rank) {
        return rank != null || manifest.singleRank() ? to : to.resolve(CheckpointNames.rank(manifest.rank()));
    }

    /** What {@link #verify} found for one step: files read back and matched, files only in the cold tier, and problems. */
    public record Verified(long step, int checked, int cold, List<String> problems) {}

    /**
     * Checks a complete step on Plinth: its marker, one manifest per rank, and every resident
     * file's size and CRC32C read back. Released files are in the cold tier, whose copy HSM checks
     * part by part when it restores them; they are counted, not read.
     */
    public Verified verify(long step, LongConsumer progress) {
        PlinthCheckpoints.StoredStep stored = store.completeStep(step);
        if (stored == null) {
            throw new PlinthException(ErrorCode.NOT_FOUND, CheckpointNames.step(step) + " is not complete on Plinth");
        }
        List<String> problems = new ArrayList<>();
        List<RankManifest> manifests = store.manifests(stored.path());
        if (manifests.size() != stored.marker().worldSize()) {
            problems.add(manifests.size() + " rank manifest(s), the marker says " + stored.marker().worldSize());
        }
        int checked = 0;
        int cold = 0;
        for (PlinthCheckpoints.StoredFile file : store.files(stored, manifests)) {
            if (file.attributes().sizeBytes() != file.entry().size()) {
                problems.add(file.path() + ": " + file.attributes().sizeBytes() + " bytes, manifest says " + file.entry().size());
            } else if (file.released()) {
                cold++;
            } else {
                long crc = store.crc32c(file.path());
                if (file.entry().crc32c() == null || crc != file.entry().crc32c()) {
                    problems.add(file.path() + ": CRC32C " + PlinthCheckpoints.hex(crc) + ", manifest says "
                            + (file.entry().crc32c() == null ? "nothing" : PlinthCheckpoints.hex(file.entry().crc32c())));
                } else {
                    checked++;
                }
                progress.accept(file.entry().size());
            }
        }
        return new Verified(step, checked, cold, problems);
    }
}
