package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;

/**
 * mknod of a FIFO, a device node or a socket: an inode of its type with no data and no layout
 * (a device's number in rdev). Each host's kernel makes the pipe, device or socket of it, so a
 * FIFO on the mount joins processes of one host, as on any network file system. Device nodes are
 * root's to make, as the kernel's CAP_MKNOD says; regular files go through {@link Create}.
 */
public final class MakeNode {
    private MakeNode() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.MakeNode request) {
        FileType type = request.type();
        if (type == null || !type.special()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "mknod makes FIFOs, device nodes and sockets, not " + type);
        }
        if ((type == FileType.CHARACTER_DEVICE || type == FileType.BLOCK_DEVICE) && !namespace.caller().isRoot()) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "only root makes device nodes");
        }
        InodeRecord parent = NewEntry.writableParent(namespace, request.parentId(), request.name());
        if (namespace.dentry(parent.inodeId(), request.name()) != null) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + request.name() + "'");
        }
        long rdev = type == FileType.CHARACTER_DEVICE || type == FileType.BLOCK_DEVICE ? request.rdev() : 0;
        return new AttributesReply(NewEntry.create(namespace, parent, request.name(), type, request.mode(), null, null, rdev).toAttributes());
    }
}
