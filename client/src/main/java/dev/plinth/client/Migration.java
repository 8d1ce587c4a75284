package dev.plinth.client;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.HsmMessages;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.nio.ByteBuffer;
import java.util.function.LongConsumer;

/**
 * {@code plinth migrate} for one file (design note 90): the file's bytes are copied into an
 * unnamed file made with the new layout, beside the old one, and one metadata change
 * ({@link MetaMessages.SwapLayout}) gives the file the copy's layout and the copy the old one, so
 * that the copy's removal at its close frees the old chunks. The change waits while the file is
 * open (up to ten seconds) and is refused after the file changed during the copy, which is then
 * made again (as Lustre's {@code lfs migrate} gives up its lease when
 * someone opens the file): a write is never lost, and a reader sees the old layout or the new
 * one, whole. The file's size, mtime and HSM state stay;
 * a released file is skipped (its bytes are in the archive). If the migrator dies, the unnamed
 * copy goes with its session.
 */
public final class Migration {
    private Migration() {}

    /** Copies made before a file that keeps changing is given up. */
    public static final int ATTEMPTS = 8;
    /** How long a finished copy waits for the file to be closed by everyone before the file is reported busy. */
    static final long OPEN_WAIT_NANOS = 10_000_000_000L;
    private static final int COPY_BLOCK_BYTES = 4 << 20;

    public enum Outcome { MIGRATED, UNCHANGED, RELEASED, BUSY }

    /** What became of one file: its bytes copied (of the last attempt), the layouts, and the attempts made. */
    public record Result(String path, Outcome outcome, long bytes, Layout from, Layout to, int attempts, String note) {}

    /**
     * The layout {@code file} is migrated to: {@code target}'s choices, and the file's own
     * Data-on-MDT part (it stays with the inode); null where that is the layout the file has.
     */
    public static Layout targetLayout(Layout current, Layout target) {
        Layout wanted = new Layout(target.stripeCount(), target.stripeSizeBytes(), target.chunkSizeBytes(), target.pool(), target.replicas(),
                java.util.List.of(), current.mdtBytes(), target.protection(), target.dataCells(), target.parityCells(), target.encoding(),
                Layout.VERSION, 0, target.compressionLevel()).validate();
        return sameStorage(current, wanted) ? null : wanted;
    }

    /** Whether two layouts store bytes alike (chains and format version aside). */
    static boolean sameStorage(Layout a, Layout b) {
        return a.stripeCount() == b.stripeCount() && a.stripeSizeBytes() == b.stripeSizeBytes() && a.chunkSizeBytes() == b.chunkSizeBytes()
                && a.pool().equals(b.pool()) && a.replicas() == b.replicas() && a.protection() == b.protection()
                && a.dataCells() == b.dataCells() && a.parityCells() == b.parityCells() && a.encoding() == b.encoding()
                && a.compressionLevel() == b.compressionLevel();
    }

    /**
     * Migrates the regular file at {@code path} to {@code target} (a template: chains are chosen
     * for the copy), reporting each copied block's size to {@code copied}.
     */
    public static Result migrate(PlinthClient client, String path, Layout target, LongConsumer copied) {
        String note = null;
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            Attributes file = client.stat(path);
            if (file.type() != dev.plinth.common.FileType.FILE) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, path + " is not a regular file");
            }
            Layout wanted = targetLayout(file.layout(), target);
            if (wanted == null) {
                return new Result(path, Outcome.UNCHANGED, 0, file.layout(), file.layout(), attempt - 1, null);
            }
            if (HsmMessages.released(file)) {
                return new Result(path, Outcome.RELEASED, 0, file.layout(), wanted, attempt - 1,
                        "released: its bytes are in the archive; restore it to migrate it");
            }
            long parentId = client.stat(dev.plinth.common.Names.parent(path)).inodeId();
            long bytes = 0;
            try (PlinthFile copy = client.createUnnamed(parentId, file.mode() & 0777, wanted)) {
                bytes = copyStriped(client, path, file, copy, copied);
                copy.fsync();
                long openDeadline = System.nanoTime() + OPEN_WAIT_NANOS;
                while (true) {
                    try {
                        MetaMessages.AttributesReply swapped = client.<MetaMessages.AttributesReply>meta(new MetaMessages.SwapLayout(
                                client.header(), file.inodeId(), copy.inodeId(), file.sizeBytes(), file.mtimeNanos()));
                        return new Result(path, Outcome.MIGRATED, bytes, file.layout(), swapped.attributes().layout(), attempt, note);
                    } catch (PlinthException e) {
                        if (e.code() == ErrorCode.CHANGED) { // written since the copy began: copy again
                            note = e.detail();
                            break;
                        }
                        if (e.code() != ErrorCode.WOULD_BLOCK) {
                            throw e;
                        }
                        if (System.nanoTime() > openDeadline) { // open all along: the copy is still good, but the file is in use
                            return new Result(path, Outcome.BUSY, 0, file.layout(), wanted, attempt, e.detail()
                                    + " (for " + OPEN_WAIT_NANOS / 1_000_000_000 + " s; try again later)");
                        }
                        pause(50);
                    }
                }
            } // the copy (with whichever layout it holds now) goes with its close
            pause(Math.min(2000, 100L << attempt)); // a writer may be about to stop
        }
        return new Result(path, Outcome.BUSY, 0, null, null, ATTEMPTS, note + " (" + ATTEMPTS + " copies made; try again later)");
    }

    static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new PlinthException(ErrorCode.INTERRUPTED, "interrupted");
        }
    }

    /** Copies the file's bytes past its Data-on-MDT part (which stays with the inode) into {@code copy}; returns how many. */
    private static long copyStriped(PlinthClient client, String path, Attributes file, PlinthFile copy, LongConsumer copied) {
        long start = Math.min(file.sizeBytes(), file.layout().mdtBytes());
        long total = 0;
        try (PlinthFile source = client.open(path, false)) {
            source.adviseSequential(start, file.sizeBytes() - start);
            ByteBuffer buffer = ByteBuffer.allocateDirect(COPY_BLOCK_BYTES);
            for (long offset = start; offset < file.sizeBytes(); ) {
                buffer.clear().limit((int) Math.min(COPY_BLOCK_BYTES, file.sizeBytes() - offset));
                int read = source.read(offset, buffer);
                if (read <= 0) {
                    break; // the file got shorter: the swap sees it changed
                }
                buffer.flip();
                copy.write(offset, buffer);
                offset += read;
                total += read;
                copied.accept(read);
            }
        }
        return total;
    }
}
