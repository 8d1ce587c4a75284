package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import java.nio.ByteBuffer;

/**
 * Open files per client session. An open is counted under the session so that an unlinked file
 * stays readable until its last close, and so that a dead client's opens end with its lease.
 * Close also settles what the client wrote: size and mtime change at close or fsync, not per write.
 */
public final class OpenClose {
    private OpenClose() {}

    public static AttributesReply open(Namespace namespace, MetaMessages.Open request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        if (inode.isDirectory() && request.write()) {
            throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "open of a directory for writing");
        }
        if (inode.type() == FileType.SYMLINK) {
            throw new PlinthException(ErrorCode.SYMLINK_LOOP, "open of a symbolic link");
        }
        if (request.write() && !Hsm.restoring(namespace, inode)) { // a restore writes back the bytes as they were, ciphertext too
            refuseIfEncrypted(inode);
            inode = Hsm.beforeDataChange(namespace, inode);
        }
        register(namespace, inode.inodeId());
        return new AttributesReply(inode.toAttributes());
    }

    /**
     * An encrypted file (S3 server-side encryption) is replaced whole through S3, never written in
     * place: its bytes are a keystream's XOR, and a second write at the same place would reuse it.
     */
    static void refuseIfEncrypted(InodeRecord inode) {
        if (inode.encrypted()) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED,
                    "the file is encrypted (S3 server-side encryption): replace it through S3 rather than write it in place");
        }
    }

    /** Counts one more open of a file by the calling client's session. */
    static void register(Namespace namespace, long inodeId) {
        long clientId = namespace.header().clientId();
        Sessions.requireSession(namespace, clientId);
        byte[] key = MetaKeys.twoIds(MetaKeys.OPEN_BY_INODE, inodeId, clientId);
        int count = (int) namespace.getLong(key, 0) + 1;
        namespace.putLong(key, count);
        namespace.putLong(MetaKeys.twoIds(MetaKeys.OPEN_BY_SESSION, clientId, inodeId), count);
    }

    public static AttributesReply close(Namespace namespace, MetaMessages.Close request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        long clientId = namespace.header().clientId();
        DataOnMdt.write(namespace, inode, request.inline());
        if (request.wrote() && inode.type() == FileType.FILE) {
            long size = Math.max(inode.sizeBytes(), request.writtenEndBytes());
            inode = inode.withSize(size, namespace.now());
            namespace.putInode(inode);
        }
        if (request.release()) {
            release(namespace, inode, clientId, 1);
        }
        return new AttributesReply(inode.toAttributes());
    }

    /** Ends {@code count} opens of a file by a session; removes an orphan at its last close. */
    static void release(Namespace namespace, InodeRecord inode, long clientId, int count) {
        byte[] key = MetaKeys.twoIds(MetaKeys.OPEN_BY_INODE, inode.inodeId(), clientId);
        byte[] sessionKey = MetaKeys.twoIds(MetaKeys.OPEN_BY_SESSION, clientId, inode.inodeId());
        int remaining = (int) namespace.getLong(key, 0) - count;
        if (remaining > 0) {
            namespace.putLong(key, remaining);
            namespace.putLong(sessionKey, remaining);
            return;
        }
        namespace.delete(key);
        namespace.delete(sessionKey);
        if (inode.linkCount() == 0 && namespace.getRaw(MetaKeys.id(MetaKeys.ORPHAN, inode.inodeId())) != null
                && !namespace.isOpen(inode.inodeId())) {
            namespace.removeInode(inode);
        }
    }

    static int count(byte[] value) {
        return (int) ByteBuffer.wrap(value).getLong();
    }
}
