package dev.plinth.datasets;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileTrees;
import dev.plinth.common.Json;
import dev.plinth.common.PlinthException;
import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongConsumer;
import java.util.stream.Stream;

/**
 * Packs a tree of sample files into WebDataset shards with an index ({@link ShardIndex}). Source
 * and destination are java.nio paths: local, or in a cluster through the {@code plinth://}
 * provider. The plan (which sample goes in which shard) is made once and kept in
 * {@code DEST/.pack/}, so an interrupted pack resumes to the same shards; each shard is written
 * under a temporary name, forced, its index lines kept beside it, and only then renamed to its
 * final name; {@code index.jsonl} is written last.
 */
public final class Packer {
    public static final String WORK = ".pack";
    private static final String PLAN = "plan.jsonl";
    private static final int COPY_BYTES = 1 << 20;

    /** {@code shardSizeBytes} 0: shards by {@code samplesPerShard}; else shards up to that many bytes (at least one sample each). */
    public record Options(int samplesPerShard, long shardSizeBytes, String pattern, boolean shuffle, long seed, int workers,
                          List<String> filesFrom, boolean lowercaseExtensions) {
        public Options {
            if (samplesPerShard < 1 || shardSizeBytes < 0 || workers < 1) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "--samples-per-shard and --workers must be 1 or more, --shard-size positive");
            }
            try {
                String.format(Locale.ROOT, pattern, 0);
            } catch (java.util.IllegalFormatException e) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "--pattern must hold one integer conversion, as shard-%06d.tar: " + pattern);
            }
            if (pattern.contains("/") || !pattern.endsWith(".tar")) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "--pattern names a .tar file in DEST, without '/': " + pattern);
            }
        }

        public static Options defaults() {
            return new Options(1000, 0, "shard-%06d.tar", false, 0, 4, null, false);
        }

        /** What the plan depends on: a resumed pack must have the same. */
        Map<String, Object> planned(String source) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("source", source);
            out.put("samples_per_shard", samplesPerShard);
            out.put("shard_size", shardSizeBytes);
            out.put("pattern", pattern);
            out.put("shuffle", shuffle);
            out.put("seed", seed);
            out.put("lowercase_extensions", lowercaseExtensions);
            out.put("files_from", filesFrom == null ? null : filesFrom.size() + " paths");
            return out;
        }
    }

    /** A member to pack: its name in the shard, its source path relative to SRC, its size and mtime. */
    record PlannedMember(String name, String source, long size, long mtimeSeconds) {}

    record PlannedSample(String key, List<PlannedMember> members) {
        long tarBytes() {
            return members.stream().mapToLong(m -> Tar.header(m.name(), m.size(), 0644, 0).length + Tar.padded(m.size())).sum();
        }
    }

    record PlannedShard(String name, List<PlannedSample> samples) {
        long dataBytes() {
            return samples.stream().flatMap(s -> s.members().stream()).mapToLong(PlannedMember::size).sum();
        }
    }

    /** What a pack did. */
    public record Result(int shards, long samples, long bytes, int written, int resumed) {}

    private final Path source;
    private final Path dest;
    private final Options options;

    public Packer(Path source, Path dest, Options options) {
        this.source = source;
        this.dest = dest;
        this.options = options;
    }

    /** The bytes of sample data to pack (known once the plan is made); for progress. */
    private volatile long totalBytes;

    public long totalBytes() {
        return totalBytes;
    }

    /**
     * Packs (or resumes packing); {@code progress} gets the bytes of sample data as they are
     * packed, from any worker thread. Refuses with the list of problems before writing anything.
     */
    public Result run(LongConsumer progress) throws IOException, InterruptedException {
        if (Files.exists(dest.resolve(ShardIndex.FILE))) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, dest + " already holds a finished pack (" + ShardIndex.FILE
                    + "): pack into another directory, or remove it first");
        }
        Path work = dest.resolve(WORK);
        List<PlannedShard> shards = Files.exists(work.resolve(PLAN)) ? readPlan(work.resolve(PLAN)) : null;
        if (shards == null) {
            shards = plan(samples(listSource()));
            Files.createDirectories(work);
            writePlan(work.resolve(PLAN), shards);
        }
        totalBytes = shards.stream().mapToLong(PlannedShard::dataBytes).sum();
        AtomicInteger written = new AtomicInteger();
        AtomicInteger resumed = new AtomicInteger();
        List<PlannedShard> all = shards;
        ExecutorService pool = Executors.newFixedThreadPool(Math.min(options.workers(), Math.max(1, shards.size())),
                Thread.ofPlatform().daemon().name("pack-", 0).factory());
        try {
            List<Future<Object>> futures = new ArrayList<>();
            for (PlannedShard shard : all) {
                futures.add(pool.submit((java.util.concurrent.Callable<Object>) () -> {
                    if (Files.exists(dest.resolve(shard.name())) && Files.exists(work.resolve(shard.name() + ".jsonl"))) {
                        resumed.incrementAndGet();
                        progress.accept(shard.dataBytes());
                    } else {
                        writeShard(shard, work, progress);
                        written.incrementAndGet();
                    }
                    return null;
                }));
            }
            dev.plinth.common.Futures.awaitAll(futures);
        } finally {
            pool.shutdownNow();
        }
        long samples = writeIndex(all, work);
        return new Result(all.size(), samples, totalBytes, written.get(), resumed.get());
    }

    // ---- the plan

    private record SourceFile(String path, long size, long mtimeSeconds) {}

    private List<SourceFile> listSource() throws IOException {
        List<SourceFile> files = new ArrayList<>();
        List<String> problems = new ArrayList<>();
        if (options.filesFrom() != null) {
            for (String line : options.filesFrom()) {
                String relative = line.strip().replaceAll("^\\./", "");
                if (relative.isEmpty()) {
                    continue;
                }
                if (relative.startsWith("/") || relative.equals("..") || relative.startsWith("../") || relative.contains("/../")) {
                    problems.add(relative + ": --files-from paths are relative to SRC and stay under it");
                    continue;
                }
                addFile(source.resolve(relative), relative, files, problems);
            }
        } else {
            if (!Files.isDirectory(source)) {
                throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, source + ": SRC must be a directory");
            }
            try (Stream<Path> walk = Files.walk(source)) {
                for (Path path : walk.filter(p -> !p.equals(source)).toList()) {
                    if (Files.isDirectory(path)) {
                        continue;
                    }
                    String relative = source.relativize(path).toString().replace(java.io.File.separatorChar, '/');
                    addFile(path, relative, files, problems);
                }
            }
        }
        refuseIf(problems);
        return files;
    }

    private static void addFile(Path path, String relative, List<SourceFile> files, List<String> problems) {
        try {
            BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class);
            if (!attributes.isRegularFile()) {
                problems.add(relative + ": not a regular file");
            } else if (!Files.isReadable(path)) {
                problems.add(relative + ": not readable");
            } else {
                files.add(new SourceFile(relative, attributes.size(), attributes.lastModifiedTime().toMillis() / 1000));
            }
        } catch (IOException e) {
            problems.add(relative + ": " + e.getMessage());
        }
    }

    /** Groups files into samples by WebDataset's key rule; refuses names it would drop or change, and conflicting members. */
    List<PlannedSample> samples(List<SourceFile> files) {
        Map<String, Map<String, PlannedMember>> byKey = new TreeMap<>();
        List<String> problems = new ArrayList<>();
        for (SourceFile file : files) {
            SampleNames.Split split = SampleNames.split(file.path());
            String extension = split.extension();
            if (split.problem() != null) {
                boolean upperCase = extension != null && !extension.isEmpty() && !extension.equals(extension.toLowerCase(Locale.ROOT))
                        && SampleNames.split(split.key() + "." + extension.toLowerCase(Locale.ROOT)).problem() == null;
                if (!(upperCase && options.lowercaseExtensions())) {
                    problems.add(file.path() + ": " + split.problem());
                    continue;
                }
                extension = extension.toLowerCase(Locale.ROOT);
            }
            String name = split.key() + "." + extension;
            PlannedMember member = new PlannedMember(name, file.path(), file.size(), file.mtimeSeconds());
            PlannedMember clash = byKey.computeIfAbsent(split.key(), ignored -> new TreeMap<>()).putIfAbsent(extension, member);
            if (clash != null) {
                problems.add(file.path() + ": sample " + split.key() + " already has member ." + extension + " (" + clash.source() + ")");
            }
        }
        refuseIf(problems);
        List<PlannedSample> samples = new ArrayList<>();
        byKey.forEach((key, members) -> samples.add(new PlannedSample(key, List.copyOf(members.values()))));
        if (options.shuffle()) {
            Collections.shuffle(samples, new Random(options.seed()));
        }
        return samples;
    }

    private static void refuseIf(List<String> problems) {
        if (problems.isEmpty()) {
            return;
        }
        StringBuilder message = new StringBuilder(problems.size() + " file(s) cannot be packed, nothing written:");
        problems.stream().limit(50).forEach(problem -> message.append("\n  ").append(problem));
        if (problems.size() > 50) {
            message.append("\n  ... and ").append(problems.size() - 50).append(" more");
        }
        throw new PlinthException(ErrorCode.INVALID_ARGUMENT, message.toString());
    }

    List<PlannedShard> plan(List<PlannedSample> samples) {
        List<PlannedShard> shards = new ArrayList<>();
        List<PlannedSample> current = new ArrayList<>();
        long currentBytes = 0;
        for (PlannedSample sample : samples) {
            long bytes = sample.tarBytes();
            boolean full = options.shardSizeBytes() > 0 ? !current.isEmpty() && currentBytes + bytes > options.shardSizeBytes()
                    : current.size() >= options.samplesPerShard();
            if (full) {
                shards.add(new PlannedShard(String.format(Locale.ROOT, options.pattern(), shards.size()), current));
                current = new ArrayList<>();
                currentBytes = 0;
            }
            current.add(sample);
            currentBytes += bytes;
        }
        if (!current.isEmpty()) {
            shards.add(new PlannedShard(String.format(Locale.ROOT, options.pattern(), shards.size()), current));
        }
        return shards;
    }

    private void writePlan(Path plan, List<PlannedShard> shards) throws IOException {
        Path temporary = plan.resolveSibling(PLAN + ".partial");
        try (BufferedWriter out = Files.newBufferedWriter(temporary, StandardCharsets.UTF_8)) {
            out.write(Json.write(options.planned(source.toString())));
            out.write('\n');
            for (PlannedShard shard : shards) {
                for (PlannedSample sample : shard.samples()) {
                    List<Object> members = new ArrayList<>();
                    for (PlannedMember member : sample.members()) {
                        members.add(List.of(member.name(), member.source(), member.size(), member.mtimeSeconds()));
                    }
                    Map<String, Object> line = new LinkedHashMap<>();
                    line.put("shard", shard.name());
                    line.put("key", sample.key());
                    line.put("members", members);
                    out.write(Json.write(line));
                    out.write('\n');
                }
            }
        }
        Files.move(temporary, plan, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private List<PlannedShard> readPlan(Path plan) throws IOException {
        Map<String, List<PlannedSample>> byShard = new LinkedHashMap<>();
        try (BufferedReader in = Files.newBufferedReader(plan, StandardCharsets.UTF_8)) {
            Object header = Json.parse(in.readLine());
            if (!Json.write(options.planned(source.toString())).equals(Json.write(header))) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, dest + " holds an unfinished pack made with other options ("
                        + Json.write(header) + "): run it again with the same options to finish it, or remove " + dest.resolve(WORK));
            }
            String line;
            while ((line = in.readLine()) != null) {
                Map<?, ?> entry = (Map<?, ?>) Json.parse(line);
                List<PlannedMember> members = new ArrayList<>();
                for (Object item : (List<?>) entry.get("members")) {
                    List<?> fields = (List<?>) item;
                    members.add(new PlannedMember((String) fields.get(0), (String) fields.get(1), (Long) fields.get(2), (Long) fields.get(3)));
                }
                byShard.computeIfAbsent((String) entry.get("shard"), ignored -> new ArrayList<>())
                        .add(new PlannedSample((String) entry.get("key"), members));
            }
        }
        List<PlannedShard> shards = new ArrayList<>();
        byShard.forEach((name, samples) -> shards.add(new PlannedShard(name, samples)));
        return shards;
    }

    // ---- writing

    private void writeShard(PlannedShard shard, Path work, LongConsumer progress) throws IOException {
        Path temporary = work.resolve(shard.name() + ".partial");
        List<ShardIndex.Sample> indexed = new ArrayList<>();
        try (SeekableByteChannel channel = Files.newByteChannel(temporary, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING);
             OutputStream out = new java.io.BufferedOutputStream(Channels.newOutputStream(channel), COPY_BYTES)) {
            long offset = 0;
            byte[] buffer = new byte[COPY_BYTES];
            for (PlannedSample sample : shard.samples()) {
                List<ShardIndex.Member> members = new ArrayList<>();
                for (PlannedMember member : sample.members()) {
                    byte[] header = Tar.header(member.name(), member.size(), 0644, member.mtimeSeconds());
                    out.write(header);
                    offset += header.length;
                    long dataOffset = offset;
                    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
                    long copied = 0;
                    Path file = source.resolve(member.source());
                    try (InputStream in = Files.newInputStream(file)) {
                        int read;
                        while ((read = in.readNBytes(buffer, 0, (int) Math.min(buffer.length, member.size() - copied + 1))) > 0) {
                            copied += read;
                            if (copied > member.size()) {
                                break;
                            }
                            crc.update(buffer, 0, read);
                            out.write(buffer, 0, read);
                            progress.accept(read);
                        }
                    }
                    if (copied != member.size()) {
                        throw new PlinthException(ErrorCode.CHANGED, file + " changed since the pack was planned (" + member.size()
                                + " bytes then, " + (copied > member.size() ? "more" : copied) + " now): remove " + dest.resolve(WORK)
                                + " to plan again");
                    }
                    long padding = Tar.padded(member.size()) - member.size();
                    out.write(new byte[(int) padding]);
                    offset += member.size() + padding;
                    members.add(new ShardIndex.Member(member.name(), dataOffset, member.size(), crc.getValue()));
                }
                indexed.add(new ShardIndex.Sample(shard.name(), sample.key(), members));
            }
            out.write(Tar.end());
            out.flush();
            if (channel instanceof FileChannel file) {
                file.force(true);
            }
        }
        // the index lines first, then the shard under its name: a named shard always has its lines
        Path lines = work.resolve(shard.name() + ".jsonl");
        Path linesTemporary = work.resolve(shard.name() + ".jsonl.partial");
        try (BufferedWriter out = Files.newBufferedWriter(linesTemporary, StandardCharsets.UTF_8)) {
            for (ShardIndex.Sample sample : indexed) {
                out.write(sample.toJson());
                out.write('\n');
            }
        }
        Files.move(linesTemporary, lines, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        Files.move(temporary, dest.resolve(shard.name()), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private long writeIndex(List<PlannedShard> shards, Path work) throws IOException {
        Path temporary = dest.resolve(ShardIndex.FILE + ".partial");
        long samples = 0;
        try (OutputStream out = Files.newOutputStream(temporary)) {
            for (PlannedShard shard : shards) {
                Path lines = work.resolve(shard.name() + ".jsonl");
                try (InputStream in = Files.newInputStream(lines)) {
                    in.transferTo(out);
                }
                samples += shard.samples().size();
            }
        }
        Files.move(temporary, dest.resolve(ShardIndex.FILE), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        FileTrees.delete(work);
        return samples;
    }
}
