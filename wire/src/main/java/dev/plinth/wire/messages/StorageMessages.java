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
     */
    public record WriteChunk(int targetId, ChunkId chunk, int chunkOffset, List<Integer> segmentCrcs, long chainVersion) {}

    public record WriteChunkResult(long chunkVersion, int chunkLength) {}

    /**
     * Asks for [chunkOffset, chunkOffset + length). The reply covers whole checksum blocks from
     * {@code alignedOffset}, up to the chunk's end, with each block's stored CRC32C so the client
     * verifies what it got; bytes past {@code chunkLength} are a hole and read as zeros.
     */
    public record ReadChunk(int targetId, ChunkId chunk, int chunkOffset, int length) {}

    public record ReadChunkResult(int alignedOffset, int chunkLength, long chunkVersion, List<Integer> blockCrcs) {}

    /** Cuts stripe object {@code objectIndex} of a file to {@code objectLength} bytes. */
    public record TruncateObject(int targetId, long inodeId, int objectIndex, long objectLength, int chunkSizeBytes) {}

    /** Removes every chunk of a deleted file on one target. */
    public record RemoveFile(int targetId, long inodeId) {}

    /** Forces every chunk of a file on one target to stable storage (fsync). */
    public record SyncFile(int targetId, long inodeId) {}
}
