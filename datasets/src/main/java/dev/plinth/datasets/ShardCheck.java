package dev.plinth.datasets;

import java.io.BufferedInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.LongConsumer;

/** Checks shards against their index ({@code plinth shards verify}) and sums them up ({@code plinth shards ls}). */
public final class ShardCheck {
    private ShardCheck() {}

    /** What verify found: shards and members read, and every difference from the index. */
    public record Verified(int shards, long members, long bytes, List<String> problems) {}

    /**
     * Reads every shard the index names, whole, and compares each member (name, data offset,
     * size, CRC32C) with the index; also reports shards in the directory the index does not name.
     */
    public static Verified verify(Path directory, LongConsumer progress) throws IOException {
        Map<String, List<ShardIndex.Member>> expected = new LinkedHashMap<>();
        ShardIndex.forEach(directory, sample -> expected.computeIfAbsent(sample.shard(), ignored -> new ArrayList<>()).addAll(sample.members()));
        List<String> problems = new ArrayList<>();
        long members = 0;
        long bytes = 0;
        for (Map.Entry<String, List<ShardIndex.Member>> shard : expected.entrySet()) {
            Path file = directory.resolve(shard.getKey());
            if (!Files.exists(file)) {
                problems.add(shard.getKey() + ": missing (" + shard.getValue().size() + " member(s) in the index)");
                continue;
            }
            Map<Long, ShardIndex.Member> byOffset = new LinkedHashMap<>();
            shard.getValue().forEach(member -> byOffset.put(member.offset(), member));
            try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 20)) {
                Tar.Reader reader = new Tar.Reader(in, shard.getKey());
                byte[] buffer = new byte[1 << 20];
                Tar.Member member;
                while ((member = reader.next()) != null) {
                    java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
                    int read;
                    while ((read = reader.read(buffer, 0, buffer.length)) > 0) {
                        crc.update(buffer, 0, read);
                        progress.accept(read);
                    }
                    members++;
                    bytes += member.size();
                    ShardIndex.Member indexed = byOffset.remove(member.dataOffset());
                    if (indexed == null) {
                        problems.add(shard.getKey() + ": member " + member.name() + " at offset " + member.dataOffset() + " is not in the index");
                    } else if (!indexed.name().equals(member.name()) || indexed.size() != member.size() || indexed.crc32c() != crc.getValue()) {
                        problems.add(shard.getKey() + ": member at offset " + member.dataOffset() + " is " + member.name() + ", "
                                + member.size() + " bytes, crc32c " + String.format("%08x", crc.getValue()) + "; the index says "
                                + indexed.name() + ", " + indexed.size() + " bytes, crc32c " + String.format("%08x", indexed.crc32c()));
                    }
                }
            } catch (IOException | dev.plinth.common.PlinthException e) {
                problems.add(shard.getKey() + ": unreadable: " + e.getMessage());
                continue;
            }
            byOffset.values().forEach(missing -> problems.add(shard.getKey() + ": member " + missing.name() + " of the index is not at offset "
                    + missing.offset()));
        }
        for (String name : tarFiles(directory)) {
            if (!expected.containsKey(name)) {
                problems.add(name + ": a shard the index does not name");
            }
        }
        return new Verified(expected.size(), members, bytes, problems);
    }

    /** A pack at a glance. */
    public record Summary(int shards, long samples, long members, long bytes, long smallestShardSamples, long largestShardSamples,
                          Map<String, Long> extensions) {
        public Map<String, Object> toMap() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("shards", shards);
            out.put("samples", samples);
            out.put("members", members);
            out.put("bytes", bytes);
            out.put("samples_per_shard_min", smallestShardSamples);
            out.put("samples_per_shard_max", largestShardSamples);
            out.put("extensions", extensions);
            return out;
        }
    }

    public static Summary summarize(Path directory) throws IOException {
        Map<String, Long> perShard = new LinkedHashMap<>();
        Map<String, Long> extensions = new TreeMap<>();
        long[] counts = new long[3];
        ShardIndex.forEach(directory, sample -> {
            perShard.merge(sample.shard(), 1L, Long::sum);
            counts[0]++;
            for (ShardIndex.Member member : sample.members()) {
                counts[1]++;
                counts[2] += member.size();
                extensions.merge(SampleNames.split(member.name()).extension(), 1L, Long::sum);
            }
        });
        return new Summary(perShard.size(), counts[0], counts[1], counts[2],
                perShard.values().stream().mapToLong(Long::longValue).min().orElse(0),
                perShard.values().stream().mapToLong(Long::longValue).max().orElse(0), extensions);
    }

    static List<String> tarFiles(Path directory) throws IOException {
        TreeSet<String> names = new TreeSet<>();
        try (DirectoryStream<Path> stream = Files.newDirectoryStream(directory)) {
            for (Path path : stream) {
                String name = path.getFileName().toString();
                if (name.endsWith(".tar") && Files.isRegularFile(path)) {
                    names.add(name);
                }
            }
        }
        return new ArrayList<>(names);
    }
}
