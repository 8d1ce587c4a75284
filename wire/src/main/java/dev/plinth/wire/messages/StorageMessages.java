package dev.plinth.wire.messages;

import java.util.List;

/** Chunk I/O on storage targets. Data travels as the frame's bulk data, never in the header. */
public final class StorageMessages {
    private StorageMessages() {}

    /** Chunk {@code chunkIndex} of stripe object {@code objectIndex} of file {@code inodeId}. */
    public record ChunkId(long inodeId, int objectIndex, long chunkIndex) {}

    /**
     * Writes the frame's data at {@code chunkOffset}. {@code segmentCrcs} are the CRC32C of the
     * data cut at the chunk's 64 KiB block boundaries (see {@code Crc32cBlocks.segmentCrcs}).
     *
     * <p>A client sends it to the head of chain {@code chainId} with {@code chunkVersion} 0; the
     * head gives the write the chunk's next version and passes it down the chain with that
     * version and the one it follows ({@code previousVersion}). {@code wholeChunk} marks a
     * forward that carries the whole chunk as of {@code chunkVersion} (to a syncing member, or to
     * one that missed a version): it replaces what the receiver holds if that is older.
     * {@code cut} marks a truncation instead: no data, the chunk is cut to {@code chunkOffset}
     * bytes, versioned and passed down like a write.
     */
    public record WriteChunk(int targetId, ChunkId chunk, int chunkOffset, List<Integer> segmentCrcs, int chainId, long chainVersion,
                             long chunkVersion, long previousVersion, boolean wholeChunk, boolean cut, long cellTag) {
        /** As before cell tags: the tag 0 leaves a chunk's tag as it is. */
        public WriteChunk(int targetId, ChunkId chunk, int chunkOffset, List<Integer> segmentCrcs, int chainId, long chainVersion,
                          long chunkVersion, long previousVersion, boolean wholeChunk, boolean cut) {
            this(targetId, chunk, chunkOffset, segmentCrcs, chainId, chainVersion, chunkVersion, previousVersion, wholeChunk, cut, 0);
        }

        /** A client's write, to the head of its chain. */
        public static WriteChunk fromClient(int headTargetId, ChunkId chunk, int chunkOffset, List<Integer> segmentCrcs, int chainId,
                                            long chainVersion) {
            return new WriteChunk(headTargetId, chunk, chunkOffset, segmentCrcs, chainId, chainVersion, 0, 0, false, false);
        }

        /**
         * A client's write of an erasure-coded cell: as {@link #fromClient}, and the chunk's cell
         * tag becomes {@code cellTag} (with no data: only the tag changes).
         */
        public static WriteChunk cellFromClient(int headTargetId, ChunkId chunk, int chunkOffset, List<Integer> segmentCrcs, int chainId,
                                                long chainVersion, long cellTag) {
            return new WriteChunk(headTargetId, chunk, chunkOffset, segmentCrcs, chainId, chainVersion, 0, 0, false, false, cellTag);
        }

        /** A client's truncation of one chunk of a replicated chain to {@code length} bytes, to the head. */
        public static WriteChunk cutFromClient(int headTargetId, ChunkId chunk, int length, int chainId, long chainVersion) {
            return new WriteChunk(headTargetId, chunk, length, List.of(), chainId, chainVersion, 0, 0, false, true);
        }
    }

    public record WriteChunkResult(long chunkVersion, int chunkLength) {}

    /**
     * Asks for [chunkOffset, chunkOffset + length). The reply covers whole checksum blocks from
     * {@code alignedOffset}, up to the chunk's end, with each block's stored CRC32C so the client
     * verifies what it got; bytes past {@code chunkLength} are a hole and read as zeros.
     */
    public record ReadChunk(int targetId, ChunkId chunk, int chunkOffset, int length, int chainId) {}

    /** {@code cellTag}: the chunk's cell tag (0 where none was set; see {@code ChunkFormat}). */
    public record ReadChunkResult(int alignedOffset, int chunkLength, long chunkVersion, List<Integer> blockCrcs, long cellTag) {}

    /** Cuts stripe object {@code objectIndex} of a file to {@code objectLength} bytes. */
    public record TruncateObject(int targetId, long inodeId, int objectIndex, long objectLength, int chunkSizeBytes) {}

    /** Removes every chunk of a deleted file on one target. */
    public record RemoveFile(int targetId, long inodeId) {}

    /** A reader found this chunk damaged on {@code targetId}: check it now and repair it from a replica. */
    public record RepairChunk(int targetId, ChunkId chunk) {}

    /** One chunk as a target holds it. */
    public record ChunkEntry(ChunkId chunk, long version, int length) {}

    /**
     * The chunks of chain {@code chainId} on one target, in {@link ChunkId} order after
     * {@code startAfter} (null: from the first), at most {@code limit}: what a syncing member
     * compares its own against. Answered only once the target knows chain version
     * {@code chainVersion} (the one the syncing member syncs to): from then on it refuses writes
     * of older versions, so no write acknowledged without the syncing member can follow the list.
     */
    public record ListChunks(int targetId, int chainId, long chainVersion, ChunkId startAfter, int limit) {}

    public record ChunkList(List<ChunkEntry> chunks, boolean truncated) {}

    /** Forces every chunk of a file on one target to stable storage (fsync). */
    public record SyncFile(int targetId, long inodeId) {}

    /** What the chunks of a file take on one target: on disk ({@code storedBytes}, holes not counted) and as lengths. */
    public record FileUsage(int targetId, long inodeId) {}

    public record FileUsageResult(long storedBytes, long chunkBytes) {}
}
