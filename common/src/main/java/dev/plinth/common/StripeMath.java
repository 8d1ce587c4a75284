package dev.plinth.common;

import java.util.ArrayList;
import java.util.List;

/**
 * Lustre's striping math, the one place that maps file offsets to stored bytes.
 *
 * <p>With stripe size S and stripe count C, byte {@code o} of a file lives in stripe object
 * {@code (o / S) % C} at object offset {@code (o / (S*C)) * S + o % S}. A stripe object is cut into
 * chunks of the chunk size K: object offset {@code p} is byte {@code p % K} of chunk {@code p / K}.
 */
public final class StripeMath {
    private StripeMath() {}

    /** A contiguous run of file bytes that falls in one chunk of one stripe object. */
    public record Piece(long fileOffset, int objectIndex, long chunkIndex, int chunkOffset, int length) {}

    public static int objectIndex(Layout layout, long fileOffset) {
        return (int) ((fileOffset / layout.stripeSizeBytes()) % layout.stripeCount());
    }

    public static long objectOffset(Layout layout, long fileOffset) {
        long stripeSize = layout.stripeSizeBytes();
        long rowBytes = stripeSize * layout.stripeCount();
        return (fileOffset / rowBytes) * stripeSize + fileOffset % stripeSize;
    }

    /** Splits [offset, offset + length) into pieces in file order. */
    public static List<Piece> pieces(Layout layout, long offset, long length) {
        if (offset < 0 || length < 0 || offset + length < offset) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "bad range offset=%d length=%d", offset, length);
        }
        List<Piece> pieces = new ArrayList<>();
        long stripeSize = layout.stripeSizeBytes();
        long chunkSize = layout.chunkSizeBytes();
        long position = offset;
        long end = offset + length;
        while (position < end) {
            long objectOffset = objectOffset(layout, position);
            long leftInStripe = stripeSize - position % stripeSize;
            long leftInChunk = chunkSize - objectOffset % chunkSize;
            int pieceLength = (int) Math.min(end - position, Math.min(leftInStripe, leftInChunk));
            pieces.add(new Piece(position, objectIndex(layout, position), objectOffset / chunkSize,
                    (int) (objectOffset % chunkSize), pieceLength));
            position += pieceLength;
        }
        return pieces;
    }

    /** How many bytes stripe object {@code objectIndex} holds when the file is {@code fileSize} long. */
    public static long objectLength(Layout layout, long fileSize, int objectIndex) {
        long stripeSize = layout.stripeSizeBytes();
        long rowBytes = stripeSize * layout.stripeCount();
        long fullRows = fileSize / rowBytes;
        long rest = fileSize % rowBytes;
        long inLastRow = Math.clamp(rest - (long) objectIndex * stripeSize, 0, stripeSize);
        return fullRows * stripeSize + inLastRow;
    }
}
