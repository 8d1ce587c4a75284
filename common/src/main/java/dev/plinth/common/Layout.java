package dev.plinth.common;

import java.util.List;

/**
 * How a file's bytes are spread, with Lustre's meaning: {@code stripeCount} stripe objects take
 * {@code stripeSizeBytes} in turn; stripe object {@code i} is stored as chunks of
 * {@code chunkSizeBytes} on chain {@code chainIds[i]}. A directory's default layout has no chains
 * (the metadata service picks them from {@code pool} when a file is created). See {@link StripeMath}.
 *
 * <p>{@code mdtBytes} is Lustre's Data-on-MDT component: bytes {@code [0, mdtBytes)} of the file
 * live in the metadata service with the inode (0: none), so a small file costs no storage round
 * trip. The stripes keep the striping math of the file offset; they simply never hold bytes below
 * {@code mdtBytes}. Fixed when the file is created, so a file never changes where a byte lives.
 *
 * <p>How the bytes are protected and encoded are two more choices, each with one implementation
 * of the client's StripeIo per value: {@code protection} REPLICATED keeps {@code replicas} copies
 * on chains; ERASURE_CODED splits each stripe into {@code dataCells} data and
 * {@code parityCells} parity cells. {@code encoding} NONE stores bytes as written, LZ4 and ZSTD
 * compress them in blocks ({@code compressionLevel}: the codec's level, 0 for its default; only
 * writers use it). HSM state (archived, released) is the inode's, not the layout's.
 * {@code version} says which of these fields a stored layout had: records only gain components
 * at the end, so a layout written before them reads as version 1, replicated and unencoded.
 *
 * <p>{@code chunkOwnerId} is the inode id that names the file's chunks on the targets, where it is
 * not the file's own (0): a migrated file keeps the chunks its copy wrote, under the copy's id
 * (design note 90). Only files' layouts have one; a template never does.
 *
 * <p>{@code staleCells} (bit {@code i}: cell {@code i}) are an erasure-coded file's cells that a
 * write went without while their targets were away (design note 89): they may hold bytes older
 * than the rest of their row, so readers decode them from the others until the upkeep has
 * rebuilt them and cleared the bit. At most {@code parityCells} of them; a template has none.
 */
public record Layout(int stripeCount, int stripeSizeBytes, int chunkSizeBytes, String pool, int replicas,
                     List<Integer> chainIds, int mdtBytes, Protection protection, int dataCells, int parityCells, Encoding encoding,
                     int version, long chunkOwnerId, int compressionLevel, long staleCells) {
    /** How a file's bytes survive a lost target. Stored by ordinal: only append. */
    public enum Protection { REPLICATED, ERASURE_CODED }

    /** How a file's bytes are stored: as written, or compressed in blocks. Stored by ordinal: only append. */
    public enum Encoding { NONE, LZ4, ZSTD }

    /** The layout record's format: 1 had no protection or encoding (replicated, as written); 2 has them. */
    public static final int VERSION = 2;
    public static final int EC_DATA_CELLS_MAX = 32;
    /** zstd's levels (negative ones are its fast modes); lz4 has one. */
    public static final int ZSTD_LEVEL_MIN = -7;
    public static final int ZSTD_LEVEL_MAX = 22;
    public static final int EC_PARITY_CELLS_MAX = 16;
    public static final int STRIPE_COUNT_MAX = 256;
    public static final int STRIPE_SIZE_UNIT = 64 * 1024;
    public static final int STRIPE_SIZE_MAX = 64 * 1024 * 1024;
    public static final int CHUNK_SIZE_MIN = 64 * 1024;
    public static final int CHUNK_SIZE_MAX = 64 * 1024 * 1024;
    public static final String DEFAULT_POOL = "default";
    /** 1 PiB: the largest file; writers and the metadata service both enforce it. */
    public static final long FILE_SIZE_MAX = 1L << 50;

    /** The largest Data-on-MDT component: every write below it is a metadata change. */
    public static final int MDT_BYTES_MAX = 1 << 20;

    /** A layout whose chunks are named by its file's own inode id. */
    public Layout(int stripeCount, int stripeSizeBytes, int chunkSizeBytes, String pool, int replicas, List<Integer> chainIds, int mdtBytes,
                  Protection protection, int dataCells, int parityCells, Encoding encoding, int version) {
        this(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chainIds, mdtBytes, protection, dataCells, parityCells, encoding,
                version, 0, 0);
    }

    /** A layout without stale cells. */
    public Layout(int stripeCount, int stripeSizeBytes, int chunkSizeBytes, String pool, int replicas, List<Integer> chainIds, int mdtBytes,
                  Protection protection, int dataCells, int parityCells, Encoding encoding, int version, long chunkOwnerId,
                  int compressionLevel) {
        this(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chainIds, mdtBytes, protection, dataCells, parityCells, encoding,
                version, chunkOwnerId, compressionLevel, 0);
    }

    /** A layout with a chunk owner and the codec's default level. */
    public Layout(int stripeCount, int stripeSizeBytes, int chunkSizeBytes, String pool, int replicas, List<Integer> chainIds, int mdtBytes,
                  Protection protection, int dataCells, int parityCells, Encoding encoding, int version, long chunkOwnerId) {
        this(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chainIds, mdtBytes, protection, dataCells, parityCells, encoding,
                version, chunkOwnerId, 0);
    }

    public Layout {
        chainIds = List.copyOf(chainIds);
        if (version == 0) { // written before protection and encoding were fields
            version = 1;
        }
        protection = protection == null ? Protection.REPLICATED : protection;
        encoding = encoding == null ? Encoding.NONE : encoding;
    }

    /** A replicated, unencoded layout (what every layout was before protection and encoding). */
    public Layout(int stripeCount, int stripeSizeBytes, int chunkSizeBytes, String pool, int replicas, List<Integer> chainIds, int mdtBytes) {
        this(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chainIds, mdtBytes, Protection.REPLICATED, 0, 0, Encoding.NONE,
                VERSION);
    }

    /** A layout without a Data-on-MDT component. */
    public Layout(int stripeCount, int stripeSizeBytes, int chunkSizeBytes, String pool, int replicas, List<Integer> chainIds) {
        this(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chainIds, 0);
    }

    /** Checks the values that came from outside; throws INVALID_ARGUMENT naming the bad one. */
    public static final int REPLICATED_CHUNK_SIZE_MAX = 16 << 20;

    /** The root directory's layout on a new file system, from the {@code layout.*} settings. */
    public static Layout rootDefault(Config config) {
        return new Layout(config.get(Settings.LAYOUT_STRIPE_COUNT), Math.toIntExact(config.get(Settings.LAYOUT_STRIPE_SIZE)),
                Math.toIntExact(config.get(Settings.LAYOUT_CHUNK_SIZE)), DEFAULT_POOL, config.get(Settings.LAYOUT_REPLICAS), List.of(),
                Math.toIntExact(config.get(Settings.LAYOUT_MDT_BYTES)));
    }

    public Layout validate() {
        if (stripeCount < 1 || stripeCount > STRIPE_COUNT_MAX) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "stripe count %d not in 1..%d", stripeCount, STRIPE_COUNT_MAX);
        }
        if (stripeSizeBytes < STRIPE_SIZE_UNIT || stripeSizeBytes > STRIPE_SIZE_MAX || stripeSizeBytes % STRIPE_SIZE_UNIT != 0) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "stripe size %d is not a multiple of 64 KiB up to 64 MiB", stripeSizeBytes);
        }
        if (chunkSizeBytes < CHUNK_SIZE_MIN || chunkSizeBytes > CHUNK_SIZE_MAX || Integer.bitCount(chunkSizeBytes) != 1) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "chunk size %d is not a power of two in 64 KiB..64 MiB", chunkSizeBytes);
        }
        if (replicas < 1 || replicas > 8) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "replicas %d not in 1..8", replicas);
        }
        if (replicas > 1 && chunkSizeBytes > REPLICATED_CHUNK_SIZE_MAX) {
            // a replica that missed writes is sent whole chunks, each in one message
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "replicated layouts take chunks of at most 16 MiB, not %d", chunkSizeBytes);
        }
        if (pool == null || pool.isEmpty() || pool.length() > 64) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "pool name must be 1..64 characters");
        }
        if (mdtBytes < 0 || mdtBytes > MDT_BYTES_MAX || mdtBytes % STRIPE_SIZE_UNIT != 0) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "Data-on-MDT size %d is not a multiple of 64 KiB up to 1 MiB", mdtBytes);
        }
        if (!chainIds.isEmpty() && chainIds.size() != stripeCount) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "layout names %d chains for %d stripes", chainIds.size(), stripeCount);
        }
        if (protection == Protection.ERASURE_CODED) {
            if (dataCells < 1 || dataCells > EC_DATA_CELLS_MAX || parityCells < 1 || parityCells > EC_PARITY_CELLS_MAX) {
                throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "erasure coding %d+%d: data cells must be 1..%d and parity cells 1..%d",
                        dataCells, parityCells, EC_DATA_CELLS_MAX, EC_PARITY_CELLS_MAX);
            }
            if (replicas != 1) {
                throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "an erasure-coded layout has no replicas (its parity protects it)");
            }
            if (stripeCount != dataCells + parityCells) {
                throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "an erasure-coded %d+%d layout stripes over %d targets, not %d",
                        dataCells, parityCells, dataCells + parityCells, stripeCount);
            }
            if (chunkSizeBytes % stripeSizeBytes != 0) {
                throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "an erasure-coded layout's chunk size (%d) must be a multiple of its "
                        + "stripe size (%d): a cell lies in one chunk", chunkSizeBytes, stripeSizeBytes);
            }
        } else if (dataCells != 0 || parityCells != 0) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "a replicated layout has no data or parity cells");
        }
        if (encoding == Encoding.ZSTD ? compressionLevel < ZSTD_LEVEL_MIN || compressionLevel > ZSTD_LEVEL_MAX : compressionLevel != 0) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "compression level %d: zstd takes %d..%d, lz4 and none take none",
                    compressionLevel, ZSTD_LEVEL_MIN, ZSTD_LEVEL_MAX);
        }
        if (staleCells != 0 && (protection != Protection.ERASURE_CODED || Long.bitCount(staleCells) > parityCells
                || (staleCells >>> stripeCount) != 0)) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "stale cells %s: only an erasure-coded layout has them, at most as many "
                    + "as its parity cells", Long.toBinaryString(staleCells));
        }
        if (version < 1 || version > VERSION) {
            throw PlinthException.of(ErrorCode.NOT_SUPPORTED, "layout format %d (this version reads up to %d)", version, VERSION);
        }
        return this;
    }

    public boolean compressed() {
        return encoding != Encoding.NONE;
    }

    /** A compressed layout's slot: the stored bytes one block of the file may take (header and payload). */
    public static final int COMPRESSED_SLOT_BYTES = STRIPE_SIZE_UNIT;
    public static final int COMPRESSED_HEADER_BYTES = 16;
    /** A compressed layout's block: the file's bytes that one slot holds. */
    public static final int COMPRESSED_BLOCK_BYTES = COMPRESSED_SLOT_BYTES - COMPRESSED_HEADER_BYTES;

    /**
     * Where the stored offsets of a file of {@code fileSize} bytes end: the size itself, or for
     * a compressed layout the end of the slot of its last block (the client's CompressedBlocks).
     */
    public long storedSize(long fileSize) {
        if (!compressed() || fileSize <= mdtBytes) {
            return fileSize;
        }
        return mdtBytes + Math.ceilDiv(fileSize - mdtBytes, (long) COMPRESSED_BLOCK_BYTES) * COMPRESSED_SLOT_BYTES;
    }

    /** This layout with its file data compressed by {@code encoding} at {@code level} (0: the codec's default), otherwise as this one. */
    public Layout withCompression(Encoding encoding, int level) {
        return new Layout(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chainIds, mdtBytes, protection, dataCells, parityCells,
                encoding, VERSION, chunkOwnerId, level, staleCells);
    }

    /** How the layout compresses, as `--compress` takes it: none, lz4, zstd or zstd:LEVEL. */
    public String compressionName() {
        String codec = encoding.name().toLowerCase(java.util.Locale.ROOT);
        return compressionLevel == 0 ? codec : codec + ":" + compressionLevel;
    }

    public boolean erasureCoded() {
        return protection == Protection.ERASURE_CODED;
    }

    /** An erasure-coded layout of {@code dataCells} + {@code parityCells} over as many targets, otherwise as this one. */
    public Layout withErasureCoding(int dataCells, int parityCells) {
        return new Layout(dataCells + parityCells, stripeSizeBytes, chunkSizeBytes, pool, 1, List.of(), mdtBytes, Protection.ERASURE_CODED,
                dataCells, parityCells, encoding, VERSION, 0, compressionLevel);
    }

    /** This layout replicated {@code replicas} times over {@code stripeCount} chains, otherwise as this one. */
    public Layout withReplicas(int stripeCount, int replicas) {
        return new Layout(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, List.of(), mdtBytes, Protection.REPLICATED, 0, 0,
                encoding, VERSION, 0, compressionLevel);
    }

    public Layout withChains(List<Integer> chains) {
        return new Layout(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chains, mdtBytes, protection, dataCells, parityCells,
                encoding, version, chunkOwnerId, compressionLevel, staleCells);
    }

    /** This layout with cells {@code cells} (a bit per cell) stale, and no others. */
    public Layout withStaleCells(long cells) {
        return new Layout(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chainIds, mdtBytes, protection, dataCells, parityCells,
                encoding, version, chunkOwnerId, compressionLevel, cells);
    }

    /** Whether cell {@code cell} is stale (see {@link #staleCells}). */
    public boolean staleCell(int cell) {
        return (staleCells >>> cell & 1) != 0;
    }

    /** The stale cells' numbers, lowest first. */
    public List<Integer> staleCellList() {
        return java.util.stream.IntStream.range(0, stripeCount).filter(this::staleCell).boxed().toList();
    }

    /** The template part of the layout (no chains, no chunk owner), as a directory stores it. */
    public Layout template() {
        return new Layout(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, List.of(), mdtBytes, protection, dataCells,
                parityCells, encoding, version, 0, compressionLevel);
    }

    /** The inode id that names the chunks of file {@code inodeId} with this layout. */
    public long chunkOwner(long inodeId) {
        return chunkOwnerId != 0 ? chunkOwnerId : inodeId;
    }

    /** This layout with its chunks named by {@code owner}. */
    public Layout withChunkOwner(long owner) {
        return new Layout(stripeCount, stripeSizeBytes, chunkSizeBytes, pool, replicas, chainIds, mdtBytes, protection, dataCells, parityCells,
                encoding, version, owner, compressionLevel, staleCells);
    }
}
