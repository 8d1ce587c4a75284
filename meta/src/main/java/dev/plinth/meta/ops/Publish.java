package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;

/**
 * Puts a file written under a temporary name in place: close, mtime, xattrs and rename in one
 * change, so a crash or a failed step leaves either the old entry or the new one, and the writer
 * pays one log entry instead of four. Built from the same operations as their own requests.
 */
public final class Publish {
    private Publish() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.Publish request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        if (inode.type() != FileType.FILE) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "only a regular file can be published");
        }
        if (!namespace.caller().isRoot() && namespace.caller().uid() != inode.uid()) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "only the owner publishes a file");
        }
        OpenClose.close(namespace, new MetaMessages.Close(request.header(), request.inodeId(), request.writtenEndBytes(), true, true));
        inode = namespace.inode(request.inodeId());
        namespace.putInode(inode.withTimes(inode.atimeNanos(), request.mtimeNanos(), inode.ctimeNanos()));
        for (MetaMessages.Xattr xattr : request.xattrs()) {
            Xattrs.set(namespace, new MetaMessages.SetXattr(request.header(), request.inodeId(), xattr.name(), xattr.value(), 0));
        }
        Rename.apply(namespace, new MetaMessages.Rename(request.header(), request.parentId(), request.sourceName(), request.parentId(),
                request.targetName(), request.noReplace()));
        return new AttributesReply(namespace.inode(request.inodeId()).toAttributes());
    }
}
