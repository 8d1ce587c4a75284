package dev.plinth.datasets;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Random;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Samples streamed from WebDataset shards, as a training job reads them: the shard list (a brace
 * pattern like {@code train-{000000..000099}.tar} or a glob) is shuffled per (seed, epoch), split
 * by rank and world size and then by worker, read in order with a background thread reading
 * ahead (within {@code readAheadBytes}), grouped into samples by key, optionally shuffled through
 * a bounded buffer, and resumable: a job that saved {@link Sample#position()} + 1 samples read
 * continues with {@code resumeAfter}. The same (seed, epoch, split) always gives the same order.
 * Paths are java.nio: local, or in a cluster through the {@code plinth://} provider.
 */
public final class ShardStream implements Iterator<ShardStream.Sample>, AutoCloseable {
    private static final int CHUNK_BYTES = 1 << 20;
    /** A sample bigger than this is refused: samples are read whole into memory. */
    public static final long SAMPLE_BYTES_MAX = 256L << 20;

    /** One sample: its key, its members by extension, the shard it came from, and its position in this split's stream. */
    public record Sample(String key, Map<String, byte[]> members, String shard, long position) {}

    public static final class Builder {
        private final List<Path> shards;
        private long seed;
        private int epoch;
        private boolean shuffleShards = true;
        private int shuffleBuffer;
        private int rank;
        private int worldSize = 1;
        private int worker;
        private int workers = 1;
        private long resumeAfter;
        private long readAheadBytes = 64L << 20;

        private Builder(List<Path> shards) {
            this.shards = List.copyOf(shards);
        }

        public Builder seed(long seed) {
            this.seed = seed;
            return this;
        }

        public Builder epoch(int epoch) {
            this.epoch = epoch;
            return this;
        }

        /** Shuffle the shard list per (seed, epoch) (default); false keeps the given order. */
        public Builder shuffleShards(boolean shuffle) {
            this.shuffleShards = shuffle;
            return this;
        }

        /** Samples held and drawn from at random (0: none, the order within shards). */
        public Builder shuffleBuffer(int samples) {
            this.shuffleBuffer = samples;
            return this;
        }

        /** This process's part of a job of {@code worldSize} ranks; shard i goes to split i mod (worldSize × workers). */
        public Builder rank(int rank, int worldSize) {
            this.rank = rank;
            this.worldSize = worldSize;
            return this;
        }

        /** This data-loading worker's part of the rank's shards. */
        public Builder worker(int worker, int workers) {
            this.worker = worker;
            this.workers = workers;
            return this;
        }

        /** Skip the first {@code samples} of this split's stream (a saved position + 1). */
        public Builder resumeAfter(long samples) {
            this.resumeAfter = samples;
            return this;
        }

        public Builder readAheadBytes(long bytes) {
            this.readAheadBytes = bytes;
            return this;
        }

        public ShardStream open() throws IOException {
            if (worldSize < 1 || rank < 0 || rank >= worldSize || workers < 1 || worker < 0 || worker >= workers
                    || shuffleBuffer < 0 || resumeAfter < 0 || readAheadBytes < CHUNK_BYTES) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "rank " + rank + "/" + worldSize + ", worker " + worker + "/" + workers
                        + ", shuffle buffer " + shuffleBuffer + ", resume " + resumeAfter + ", read-ahead " + readAheadBytes);
            }
            return new ShardStream(this);
        }
    }

    public static Builder of(List<Path> shards) {
        return new Builder(shards);
    }

    /** The shards this split reads, in order: what {@link Builder#open} reads. */
    public static List<Path> split(List<Path> shards, long seed, int epoch, boolean shuffle, int slot, int slots) {
        List<Path> order = new ArrayList<>(shards);
        if (shuffle) {
            Collections.shuffle(order, new Random(seed * 1_000_003L + epoch));
        }
        List<Path> mine = new ArrayList<>();
        for (int i = slot; i < order.size(); i += slots) {
            mine.add(order.get(i));
        }
        return mine;
    }

    private static final Pattern BRACE = Pattern.compile("\\{([^{}]*)\\}");

    /**
     * The shards a pattern names under {@code directory}: braces expanded as the shell and
     * webdataset do ({@code {000000..000099}} keeping the width, {@code {a,b}}), then, if any
     * '*', '?' or '[' is left, a glob over the directory (sorted). Names that do not exist are an error.
     */
    public static List<Path> expand(Path directory, String pattern) throws IOException {
        List<String> names = new ArrayList<>();
        expandBraces(pattern, names);
        List<Path> shards = new ArrayList<>();
        for (String name : names) {
            if (name.contains("*") || name.contains("?") || name.contains("[")) {
                List<Path> matched = new ArrayList<>();
                try (DirectoryStream<Path> stream = Files.newDirectoryStream(directory, name)) {
                    stream.forEach(matched::add);
                }
                Collections.sort(matched);
                shards.addAll(matched);
            } else {
                shards.add(directory.resolve(name));
            }
        }
        List<String> missing = shards.stream().filter(path -> !Files.isRegularFile(path)).map(Path::toString).toList();
        if (!missing.isEmpty() || shards.isEmpty()) {
            throw new PlinthException(ErrorCode.NOT_FOUND, shards.isEmpty() ? "no shard matches " + directory.resolve(pattern)
                    : missing.size() + " shard(s) missing: " + String.join(", ", missing.subList(0, Math.min(5, missing.size())))
                    + (missing.size() > 5 ? ", ..." : ""));
        }
        return shards;
    }

    private static void expandBraces(String pattern, List<String> out) {
        Matcher matcher = BRACE.matcher(pattern);
        if (!matcher.find()) {
            out.add(pattern);
            return;
        }
        String head = pattern.substring(0, matcher.start());
        String tail = pattern.substring(matcher.end());
        String body = matcher.group(1);
        Matcher range = Pattern.compile("(\\d+)\\.\\.(\\d+)").matcher(body);
        if (range.matches()) {
            long from = Long.parseLong(range.group(1));
            long to = Long.parseLong(range.group(2));
            int width = range.group(1).length();
            if (Math.abs(to - from) > 10_000_000) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "brace range too large: {" + body + "}");
            }
            for (long i = from; from <= to ? i <= to : i >= to; i += from <= to ? 1 : -1) {
                expandBraces(head + String.format("%0" + width + "d", i) + tail, out);
            }
        } else {
            for (String choice : body.split(",", -1)) {
                expandBraces(head + choice + tail, out);
            }
        }
    }

    // ---- reading

    /** What the read-ahead thread hands over: a chunk of a shard, the end of one, or a failure. */
    private record Chunk(Path shard, ByteBuffer bytes, boolean end, Throwable failure) {}

    private final List<Path> shards;
    private final BlockingQueue<Chunk> chunks;
    private final Thread readAhead;
    private final Random sampleRandom;
    private final int shuffleBuffer;
    private final List<Sample> buffer = new ArrayList<>();
    private volatile boolean closed;
    private int shardIndex = -1;
    private Tar.Reader tar;
    private Tar.Member pendingMember;
    private String pendingShard;
    private long produced;
    private long delivered;
    private final long resumeAfter;
    private Sample next;
    private boolean exhausted;

    private ShardStream(Builder builder) {
        int slots = builder.worldSize * builder.workers;
        int slot = builder.rank * builder.workers + builder.worker;
        this.shards = split(builder.shards, builder.seed, builder.epoch, builder.shuffleShards, slot, slots);
        this.chunks = new ArrayBlockingQueue<>((int) Math.max(2, builder.readAheadBytes / CHUNK_BYTES));
        this.shuffleBuffer = builder.shuffleBuffer;
        this.sampleRandom = new Random((builder.seed * 1_000_003L + builder.epoch) * 31 + slot);
        this.resumeAfter = builder.resumeAfter;
        this.readAhead = Thread.ofPlatform().daemon().name("shard-read-ahead").start(this::readAhead);
    }

    /** The shards this stream reads, in order. */
    public List<Path> shards() {
        return shards;
    }

    private void readAhead() {
        try {
            for (Path shard : shards) {
                try (SeekableByteChannel channel = Files.newByteChannel(shard, StandardOpenOption.READ)) {
                    while (!closed) {
                        ByteBuffer bytes = ByteBuffer.allocate(CHUNK_BYTES);
                        while (bytes.hasRemaining() && channel.read(bytes) > 0) {
                            // fill the chunk
                        }
                        bytes.flip();
                        if (!bytes.hasRemaining()) {
                            break;
                        }
                        put(new Chunk(shard, bytes, false, null));
                    }
                } catch (java.nio.file.NoSuchFileException e) {
                    throw new PlinthException(ErrorCode.NOT_FOUND, "shard missing: " + shard);
                }
                put(new Chunk(shard, null, true, null));
            }
        } catch (InterruptedException e) {
            // closed
        } catch (Throwable e) {
            try {
                put(new Chunk(null, null, true, e));
            } catch (InterruptedException ignored) {
                // closed
            }
        }
    }

    private void put(Chunk chunk) throws InterruptedException {
        while (!closed && !chunks.offer(chunk, 100, TimeUnit.MILLISECONDS)) {
            // wait for the reader to take some
        }
    }

    /** An InputStream over one shard's chunks as the read-ahead thread hands them over. */
    private final class ShardInput extends InputStream {
        private ByteBuffer current;
        private boolean ended;

        @Override
        public int read() throws IOException {
            byte[] one = new byte[1];
            return read(one, 0, 1) < 0 ? -1 : one[0] & 0xff;
        }

        @Override
        public int read(byte[] target, int offset, int length) throws IOException {
            while (current == null || !current.hasRemaining()) {
                if (ended) {
                    return -1;
                }
                Chunk chunk;
                try {
                    chunk = chunks.take();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("interrupted");
                }
                if (chunk.failure() != null) {
                    ended = true;
                    if (chunk.failure() instanceof PlinthException plinth) {
                        throw plinth;
                    }
                    throw new IOException("reading shards: " + chunk.failure().getMessage(), chunk.failure());
                }
                if (chunk.end()) {
                    ended = true;
                    return -1;
                }
                current = chunk.bytes();
            }
            int n = Math.min(length, current.remaining());
            current.get(target, offset, n);
            return n;
        }

        /** Drops what is left of this shard (its end blocks, or a reader that stopped early). */
        void drain() throws IOException {
            byte[] sink = new byte[CHUNK_BYTES];
            while (read(sink, 0, sink.length) >= 0) {
                // discard
            }
        }
    }

    private ShardInput input;

    /** The next sample in shard order, or null at the end of the split. */
    private Sample nextInOrder() throws IOException {
        while (true) {
            if (tar == null) {
                if (input != null) {
                    input.drain();
                }
                if (shardIndex + 1 >= shards.size()) {
                    return null;
                }
                shardIndex++;
                input = new ShardInput();
                tar = new Tar.Reader(input, shards.get(shardIndex).toString());
                pendingMember = tar.next();
                pendingShard = shards.get(shardIndex).getFileName().toString();
            }
            if (pendingMember == null) {
                tar = null;
                continue;
            }
            String key = SampleNames.split(pendingMember.name()).key();
            if (key == null) { // a name the webdataset library drops: so do we
                pendingMember = tar.next();
                continue;
            }
            Map<String, byte[]> members = new LinkedHashMap<>();
            long bytes = 0;
            while (pendingMember != null) {
                SampleNames.Split split = SampleNames.split(pendingMember.name());
                if (split.key() == null) {
                    pendingMember = tar.next();
                    continue;
                }
                if (!split.key().equals(key)) {
                    break;
                }
                bytes += pendingMember.size();
                if (bytes > SAMPLE_BYTES_MAX) {
                    throw new PlinthException(ErrorCode.FILE_TOO_LARGE, pendingShard + ": sample " + key + " is over "
                            + SAMPLE_BYTES_MAX + " bytes");
                }
                members.put(split.extension().toLowerCase(java.util.Locale.ROOT), tar.readData());
                pendingMember = tar.next();
            }
            if (!members.isEmpty()) {
                return new Sample(key, members, pendingShard, produced++);
            }
        }
    }

    private Sample produce() throws IOException {
        if (shuffleBuffer == 0) {
            return nextInOrder();
        }
        while (buffer.size() < shuffleBuffer) {
            Sample sample = nextInOrder();
            if (sample == null) {
                break;
            }
            buffer.add(sample);
        }
        if (buffer.isEmpty()) {
            return null;
        }
        int pick = sampleRandom.nextInt(buffer.size());
        Sample chosen = buffer.get(pick);
        buffer.set(pick, buffer.getLast());
        buffer.removeLast();
        return chosen;
    }

    @Override
    public boolean hasNext() {
        if (next != null) {
            return true;
        }
        if (exhausted) {
            return false;
        }
        try {
            while (true) {
                Sample sample = produce();
                if (sample == null) {
                    exhausted = true;
                    return false;
                }
                long position = delivered++;
                if (position >= resumeAfter) {
                    next = new Sample(sample.key(), sample.members(), sample.shard(), position);
                    return true;
                }
            }
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Override
    public Sample next() {
        if (!hasNext()) {
            throw new NoSuchElementException();
        }
        Sample sample = next;
        next = null;
        return sample;
    }

    @Override
    public void close() {
        closed = true;
        readAhead.interrupt();
        chunks.clear();
    }
}
