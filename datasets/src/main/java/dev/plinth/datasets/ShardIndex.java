package dev.plinth.datasets;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.Json;
import dev.plinth.common.PlinthException;
import java.io.BufferedReader;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/**
 * The index a pack writes beside its shards, {@code index.jsonl}: one line per sample,
 * {@code {shard, key, members[{name, offset, size, crc32c}]}}, where {@code offset} is where the
 * member's data starts in the shard. A sample's members are written together, so one ranged read
 * from its first member's offset to its last member's end fetches the whole sample.
 */
public final class ShardIndex {
    public static final String FILE = "index.jsonl";

    public record Member(String name, long offset, long size, long crc32c) {}

    public record Sample(String shard, String key, List<Member> members) {
        public Sample {
            members = List.copyOf(members);
            if (members.isEmpty()) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "index: sample " + key + " has no members");
            }
        }

        public long start() {
            return members.getFirst().offset();
        }

        public long end() {
            Member last = members.getLast();
            return last.offset() + last.size();
        }

        public String toJson() {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("shard", shard);
            out.put("key", key);
            List<Object> listed = new ArrayList<>();
            for (Member member : members) {
                Map<String, Object> entry = new LinkedHashMap<>();
                entry.put("name", member.name());
                entry.put("offset", member.offset());
                entry.put("size", member.size());
                entry.put("crc32c", member.crc32c());
                listed.add(entry);
            }
            out.put("members", listed);
            return Json.write(out);
        }

        public static Sample parse(String line, String where) {
            try {
                if (!(Json.parse(line) instanceof Map<?, ?> map) || !(map.get("shard") instanceof String shard)
                        || !(map.get("key") instanceof String key) || !(map.get("members") instanceof List<?> listed)) {
                    throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "needs shard, key and members");
                }
                List<Member> members = new ArrayList<>();
                for (Object item : listed) {
                    if (!(item instanceof Map<?, ?> entry) || !(entry.get("name") instanceof String name)
                            || !(entry.get("offset") instanceof Long offset) || !(entry.get("size") instanceof Long size)
                            || !(entry.get("crc32c") instanceof Long crc)) {
                        throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a member needs name, offset, size and crc32c");
                    }
                    members.add(new Member(name, offset, size, crc));
                }
                return new Sample(shard, key, members);
            } catch (PlinthException e) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, where + ": " + e.detail(), e);
            }
        }
    }

    private ShardIndex() {}

    /** Calls {@code each} for every sample of {@code DIR/index.jsonl}, in order, without holding the index in memory. */
    public static void forEach(Path directory, Consumer<Sample> each) throws IOException {
        Path index = directory.resolve(FILE);
        if (!Files.exists(index)) {
            throw new NoSuchFileException(index.toString(), null, "no index: not a pack's destination, or the pack has not finished");
        }
        try (BufferedReader reader = Files.newBufferedReader(index, StandardCharsets.UTF_8)) {
            String line;
            int number = 0;
            while ((line = reader.readLine()) != null) {
                number++;
                if (!line.isBlank()) {
                    each.accept(Sample.parse(line, index + " line " + number));
                }
            }
        }
    }

    /** The sample with this key, or null (a scan of the index: one pass, nothing kept). */
    public static Sample find(Path directory, String key) throws IOException {
        Sample[] found = new Sample[1];
        forEach(directory, sample -> {
            if (found[0] == null && sample.key().equals(key)) {
                found[0] = sample;
            }
        });
        return found[0];
    }

    /** Every sample by key, for repeated random access (memory: about 200 bytes a sample). */
    public static Map<String, Sample> load(Path directory) throws IOException {
        Map<String, Sample> byKey = new LinkedHashMap<>();
        forEach(directory, sample -> byKey.put(sample.key(), sample));
        return byKey;
    }

    /** A sample's members, fetched with one ranged read of its shard and checked against their CRC32C. */
    public static Map<String, byte[]> read(Path directory, Sample sample) throws IOException {
        long length = sample.end() - sample.start();
        if (length > Integer.MAX_VALUE - 16) {
            throw new PlinthException(ErrorCode.FILE_TOO_LARGE, "sample " + sample.key() + " is " + length + " bytes: read its members one by one");
        }
        ByteBuffer bytes = ByteBuffer.allocate((int) length);
        try (SeekableByteChannel channel = Files.newByteChannel(directory.resolve(sample.shard()), StandardOpenOption.READ)) {
            channel.position(sample.start());
            while (bytes.hasRemaining()) {
                if (channel.read(bytes) < 0) {
                    throw new PlinthException(ErrorCode.IO_ERROR, sample.shard() + " ends before sample " + sample.key() + " does");
                }
            }
        }
        Map<String, byte[]> members = new LinkedHashMap<>();
        for (Member member : sample.members()) {
            byte[] data = new byte[(int) member.size()];
            System.arraycopy(bytes.array(), (int) (member.offset() - sample.start()), data, 0, data.length);
            java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
            crc.update(data);
            if (crc.getValue() != member.crc32c()) {
                throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, sample.shard() + ": member " + member.name()
                        + " does not match its CRC32C in the index");
            }
            members.put(member.name(), data);
        }
        return members;
    }
}
