package dev.plinth.client;

import com.github.luben.zstd.Zstd;
import com.github.luben.zstd.ZstdCompressCtx;
import com.github.luben.zstd.ZstdDecompressCtx;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import net.jpountz.lz4.LZ4Compressor;
import net.jpountz.lz4.LZ4Exception;
import net.jpountz.lz4.LZ4Factory;
import net.jpountz.lz4.LZ4SafeDecompressor;

/**
 * One compression codec of a compressed layout, over byte arrays: lz4 (lz4-java, its native
 * build where it loads) or zstd at a level (zstd-jni). Each block is compressed on its own (no
 * dictionary, no frame across blocks), so any block decompresses alone. Thread-safe: zstd's
 * contexts are per thread.
 */
abstract class BlockCodec {
    /** The codec's number in a stored block's header: only append. */
    static final byte RAW = 0;
    static final byte LZ4 = 1;
    static final byte ZSTD = 2;
    static final byte ZEROS = 3;

    abstract byte id();

    /**
     * Compresses {@code source[0, length)} into {@code target} from {@code targetOffset}, using
     * at most {@code maxLength} bytes; returns the compressed length, or -1 where it does not fit.
     */
    abstract int compress(byte[] source, int length, byte[] target, int targetOffset, int maxLength);

    /**
     * Decompresses {@code source[offset, offset + length)} into {@code target} from
     * {@code targetOffset}; returns the bytes it gave (at most {@code maxLength}). What follows
     * them in the {@code maxLength} bytes is undefined (zstd uses them as scratch space).
     */
    abstract int decompress(byte[] source, int offset, int length, byte[] target, int targetOffset, int maxLength);

    static BlockCodec of(Layout layout) {
        return switch (layout.encoding()) {
            case LZ4 -> Lz4.INSTANCE;
            case ZSTD -> new Zstandard(layout.compressionLevel() == 0 ? Zstd.defaultCompressionLevel() : layout.compressionLevel());
            case NONE -> throw new IllegalArgumentException("an uncompressed layout has no codec");
        };
    }

    /** The codec a stored block names, to read it (the level is a writer's choice). */
    static BlockCodec byId(byte id) {
        return switch (id) {
            case LZ4 -> Lz4.INSTANCE;
            case ZSTD -> Zstandard.READER;
            default -> throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "a compressed block names codec " + id + ", which this version does not know");
        };
    }

    private static final class Lz4 extends BlockCodec {
        static final Lz4 INSTANCE = new Lz4();
        private final LZ4Compressor compressor = LZ4Factory.fastestInstance().fastCompressor();
        private final LZ4SafeDecompressor decompressor = LZ4Factory.fastestInstance().safeDecompressor();

        @Override
        byte id() {
            return LZ4;
        }

        @Override
        int compress(byte[] source, int length, byte[] target, int targetOffset, int maxLength) {
            try {
                return compressor.compress(source, 0, length, target, targetOffset, maxLength);
            } catch (LZ4Exception e) { // the output did not fit in maxLength
                return -1;
            }
        }

        @Override
        int decompress(byte[] source, int offset, int length, byte[] target, int targetOffset, int maxLength) {
            try {
                return decompressor.decompress(source, offset, length, target, targetOffset, maxLength);
            } catch (LZ4Exception e) {
                throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "an lz4 block does not decompress: " + e.getMessage());
            }
        }
    }

    private static final class Zstandard extends BlockCodec {
        static final Zstandard READER = new Zstandard(0);
        private static final ThreadLocal<ZstdCompressCtx> COMPRESSORS = ThreadLocal.withInitial(ZstdCompressCtx::new);
        private static final ThreadLocal<ZstdDecompressCtx> DECOMPRESSORS = ThreadLocal.withInitial(ZstdDecompressCtx::new);
        private final int level;

        Zstandard(int level) {
            this.level = level;
        }

        @Override
        byte id() {
            return ZSTD;
        }

        @Override
        int compress(byte[] source, int length, byte[] target, int targetOffset, int maxLength) {
            ZstdCompressCtx context = COMPRESSORS.get();
            context.setLevel(level);
            try {
                return context.compressByteArray(target, targetOffset, maxLength, source, 0, length);
            } catch (com.github.luben.zstd.ZstdException e) {
                if (e.getErrorCode() == Zstd.errDstSizeTooSmall()) {
                    return -1;
                }
                throw new PlinthException(ErrorCode.INTERNAL, "zstd: " + e.getMessage(), e);
            }
        }

        @Override
        int decompress(byte[] source, int offset, int length, byte[] target, int targetOffset, int maxLength) {
            try {
                return DECOMPRESSORS.get().decompressByteArray(target, targetOffset, maxLength, source, offset, length);
            } catch (com.github.luben.zstd.ZstdException e) {
                throw new PlinthException(ErrorCode.CHECKSUM_MISMATCH, "a zstd block does not decompress: " + e.getMessage());
            }
        }
    }
}
