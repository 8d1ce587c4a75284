package dev.plinth.client;

import dev.plinth.common.ChunkFormat;
import dev.plinth.common.Crc32cBlocks;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.StripeMath.Piece;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.messages.MgmtMessages.ClusterMap;
import dev.plinth.wire.messages.MgmtMessages.NodeInfo;
import dev.plinth.wire.messages.MgmtMessages.TargetInfo;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import java.io.IOException;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

/**
 * Short-circuit reads: when a target's directory is on this host and readable by this process,
 * the client reads the chunk's data and stored CRCs from the files themselves, as HDFS does,
 * instead of asking the storage server. Every block is checked against its stored CRC; a
 * mismatch (a write racing the read, or real damage) is reported so the caller reads over the
 * network instead, where the target's own checks and retries apply. Thread-safe.
 */
final class LocalChunkReader {
    private final Supplier<ClusterMap> clusterMap;
    private final Map<Integer, Optional<Path>> roots = new ConcurrentHashMap<>();
    private final AtomicLong localReads = new AtomicLong();

    LocalChunkReader(Supplier<ClusterMap> clusterMap) {
        this.clusterMap = clusterMap;
    }

    long localReads() {
        return localReads.get();
    }

    /** The target's directory if it is on this host and readable here, else null. */
    Path localRoot(int targetId) {
        return roots.computeIfAbsent(targetId, id -> {
            ClusterMap map = clusterMap.get();
            TargetInfo target = map.target(id);
            NodeInfo node = target == null ? null : map.node(target.nodeId());
            if (node == null || !isThisHost(HostPort.parse(node.rpcAddress()).host())) {
                return Optional.empty();
            }
            Path root = Path.of(target.path());
            return Files.isReadable(root.resolve("target.properties")) ? Optional.of(root) : Optional.empty();
        }).orElse(null);
    }

    private static boolean isThisHost(String host) {
        try {
            InetAddress address = InetAddress.getByName(host);
            return address.isLoopbackAddress() || address.isAnyLocalAddress() || NetworkInterface.getByInetAddress(address) != null;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The bytes of {@code piece} that the chunk holds, checked, as a buffer the caller releases
     * (shorter than the piece where the chunk ends: a hole). Throws CHECKSUM_MISMATCH when the
     * caller should read over the network instead.
     */
    ByteBuf read(Path root, long inodeId, Piece piece) {
        Path dataPath = ChunkFormat.dataPath(root, inodeId, piece.objectIndex(), piece.chunkIndex());
        Path metaPath = ChunkFormat.metaPath(dataPath);
        try (FileChannel meta = FileChannel.open(metaPath, StandardOpenOption.READ)) {
            ChunkFormat.Header header = ChunkFormat.readHeader(meta, metaPath);
            int length = header.length();
            int available = Math.max(0, Math.min(piece.length(), length - piece.chunkOffset()));
            if (available == 0) {
                localReads.incrementAndGet();
                return Unpooled.EMPTY_BUFFER;
            }
            int block = Crc32cBlocks.BLOCK_BYTES;
            int alignedOffset = piece.chunkOffset() / block * block;
            int alignedEnd = (int) Math.min(length, ((long) piece.chunkOffset() + available + block - 1) / block * block);
            int[] crcs = ChunkFormat.readCrcs(meta, metaPath, header, alignedOffset / block, Crc32cBlocks.blockCount(alignedEnd - alignedOffset));
            ByteBuf data = PooledByteBufAllocator.DEFAULT.directBuffer(alignedEnd - alignedOffset);
            try (FileChannel file = FileChannel.open(dataPath, StandardOpenOption.READ)) {
                ChunkFormat.readFully(file, data.nioBuffer(0, alignedEnd - alignedOffset), alignedOffset);
                data.writerIndex(alignedEnd - alignedOffset);
                for (int i = 0; i < crcs.length; i++) {
                    int count = Math.min(block, alignedEnd - alignedOffset - i * block);
                    if (Crc32cBlocks.crc(data.nioBuffer(i * block, count)) != crcs[i]) {
                        throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "local block " + (alignedOffset + i * block) + " of " + dataPath);
                    }
                }
                localReads.incrementAndGet();
                ByteBuf piecesBytes = data.retainedSlice(piece.chunkOffset() - alignedOffset, available);
                data.release();
                return piecesBytes;
            } catch (IOException | RuntimeException e) {
                data.release();
                throw e;
            }
        } catch (NoSuchFileException e) {
            localReads.incrementAndGet();
            return Unpooled.EMPTY_BUFFER; // the chunk was never written: a hole
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "local read of " + dataPath + ": " + e.getMessage(), e);
        }
    }
}
