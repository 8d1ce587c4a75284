package dev.plinth.client;

import dev.plinth.common.StripeMath.Piece;
import io.netty.buffer.ByteBuf;
import java.util.List;

/**
 * A fetched range of a file, as the verified network buffers it arrived in (no copy into a
 * fresh array: allocating and zeroing 1 MiB per unit was the read path's largest cost). Piece
 * {@code i} holds {@code slices[i]}, possibly shorter than the piece: the rest is a hole. Owns
 * its buffers until {@link #release()}. Which pieces a range is made of is the layout's
 * ({@link StripeIo}); an extent only needs where each lies in the file.
 */
final class Extent {
    final long start;
    final int length;
    private final List<Piece> pieces;
    private final ByteBuf[] slices;
    private boolean released;

    Extent(long start, int length, List<Piece> pieces) {
        this.start = start;
        this.length = length;
        this.pieces = pieces;
        this.slices = new ByteBuf[pieces.size()];
    }

    List<Piece> pieces() {
        return pieces;
    }

    /** Hands file bytes [offset, offset + count) to {@code sink} in order: the bytes held, and runs of zeros for holes. */
    void deliver(long offset, int count, ExtentSink sink) {
        long end = offset + count;
        for (int i = 0; i < pieces.size(); i++) {
            Piece piece = pieces.get(i);
            long pieceEnd = piece.fileOffset() + piece.length();
            if (pieceEnd <= offset || piece.fileOffset() >= end) {
                continue;
            }
            int from = (int) (Math.max(offset, piece.fileOffset()) - piece.fileOffset());
            int to = (int) (Math.min(end, pieceEnd) - piece.fileOffset());
            ByteBuf slice = slices[i];
            int available = slice == null ? 0 : Math.max(0, Math.min(to, slice.readableBytes()) - from);
            if (available > 0) {
                sink.bytes(slice, slice.readerIndex() + from, available);
            }
            if (to - from - available > 0) {
                sink.zeros(to - from - available);
            }
        }
    }

    synchronized void set(int index, ByteBuf slice) {
        if (released) {
            slice.release(); // a sibling piece failed and the extent is gone
        } else {
            slices[index] = slice;
        }
    }

    synchronized void release() {
        released = true;
        for (int i = 0; i < slices.length; i++) {
            if (slices[i] != null) {
                slices[i].release();
                slices[i] = null;
            }
        }
    }
}
