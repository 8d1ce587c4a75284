package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.InlineWrite;
import java.util.Arrays;

/**
 * A file's Data-on-MDT part (Lustre's DoM): bytes {@code [0, layout.mdtBytes)} kept under one key
 * beside the inode. The stored value runs from offset 0 to the furthest byte written; the rest of
 * the part, up to the size, reads as zeros (the client cuts reads at the size it knows). As on
 * targets, writes do not move the size (close and fsync settle it), and truncation cuts what is
 * stored so that a file extended again reads zeros.
 * Like chunk writes, these need no permission check beyond the client's cluster credentials: the
 * open that gave the client its handle checked the caller.
 */
public final class DataOnMdt {
    private DataOnMdt() {}

    public static Record apply(Namespace namespace, MetaMessages.WriteInline request) {
        write(namespace, namespace.inode(request.inodeId()), request.write());
        return HandshakeMessages.EMPTY;
    }

    /** Stores {@code write} (null: nothing) in the Data-on-MDT part of {@code inode}. */
    static void write(Namespace namespace, InodeRecord inode, InlineWrite write) {
        if (write == null) {
            return;
        }
        if (inode.type() != FileType.FILE) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "data written to something that is not a regular file");
        }
        int mdtBytes = inode.layout() == null ? 0 : inode.layout().mdtBytes();
        byte[] bytes = write.bytes();
        if (write.offset() < 0 || bytes == null || (long) write.offset() + bytes.length > mdtBytes) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "write of " + (bytes == null ? 0 : bytes.length) + " bytes at "
                    + write.offset() + " outside the file's " + mdtBytes + " bytes on the MDT");
        }
        if (bytes.length == 0) {
            return; // an empty write stores nothing, wherever it is
        }
        byte[] stored = namespace.mdtData(inode.inodeId());
        int end = write.offset() + bytes.length;
        byte[] updated = stored == null ? new byte[end] : stored.length >= end ? stored.clone() : Arrays.copyOf(stored, end);
        System.arraycopy(bytes, 0, updated, write.offset(), bytes.length);
        namespace.putMdtData(inode.inodeId(), updated);
    }

    public static MetaMessages.InlineData read(Namespace namespace, MetaMessages.ReadInline request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        if (request.offset() < 0 || request.length() < 0) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "read of " + request.length() + " bytes at " + request.offset());
        }
        if ((long) request.offset() + request.length() > Hsm.readableBytes(namespace, inode)) {
            Hsm.requireResident(namespace, inode); // released, and the range is not back yet: RELEASED
        }
        byte[] stored = namespace.mdtData(inode.inodeId());
        // not cut at the size: a writer reads its own bytes before close settles the size; readers cut at the size they know
        long end = Math.min((long) request.offset() + request.length(), stored == null ? 0 : stored.length);
        byte[] bytes = end <= request.offset() ? new byte[0] : Arrays.copyOfRange(stored, request.offset(), (int) end);
        return new MetaMessages.InlineData(bytes);
    }

    /**
     * A readable file's Data-on-MDT part, all of the file when it is that short (zeros where
     * nothing is stored), if that part is at most {@code bytesMax} long; else null.
     */
    static byte[] mdtPart(Namespace namespace, InodeRecord inode, int bytesMax) {
        if (!hasPart(inode, bytesMax) || !namespace.allowed(inode, Namespace.READ) || (Hsm.states(inode) & dev.plinth.wire.messages.HsmMessages.RELEASED) != 0) {
            return null;
        }
        byte[] bytes = new byte[(int) Math.min(inode.sizeBytes(), inode.layout().mdtBytes())];
        byte[] stored = namespace.mdtData(inode.inodeId());
        if (stored != null) {
            System.arraycopy(stored, 0, bytes, 0, Math.min(bytes.length, stored.length));
        }
        return bytes;
    }

    /** Whether a file has a Data-on-MDT part (or is empty) of at most {@code bytesMax}. */
    static boolean hasPart(InodeRecord inode, int bytesMax) {
        return inode.type() == FileType.FILE && inode.layout() != null
                && Math.min(inode.sizeBytes(), inode.layout().mdtBytes()) <= bytesMax
                && (inode.layout().mdtBytes() > 0 || inode.sizeBytes() == 0);
    }

    /** The file is cut to {@code sizeBytes}: bytes past it are gone, so growing it again reads zeros. */
    static void truncate(Namespace namespace, long inodeId, long sizeBytes) {
        byte[] stored = namespace.mdtData(inodeId);
        if (stored == null || stored.length <= sizeBytes) {
            return;
        }
        namespace.putMdtData(inodeId, sizeBytes == 0 ? null : Arrays.copyOf(stored, (int) sizeBytes));
    }
}
