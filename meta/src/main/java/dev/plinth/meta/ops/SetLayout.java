package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;

/**
 * setstripe: a directory's default layout for new files and subdirectories, or the layout of a
 * file that holds no data yet (its chains already chosen by the leader). Owner or root only.
 */
public final class SetLayout {
    private SetLayout() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.SetLayout request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        namespace.requireOwner(inode);
        if (inode.type() == FileType.SYMLINK) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "symlinks have no layout");
        }
        if (inode.isDirectory()) {
            InodeRecord updated = inode.withLayout(request.layout() == null ? null : request.layout().validate().template(), namespace.now());
            namespace.putInode(updated);
            return new AttributesReply(updated.toAttributes());
        }
        if (inode.sizeBytes() > 0) {
            throw new PlinthException(ErrorCode.BUSY, "a file's layout can only be set while it is empty (use migrate)");
        }
        if (request.layout() == null || request.layout().chainIds().isEmpty()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "a file needs a placed layout");
        }
        InodeRecord updated = inode.withLayout(request.layout().validate(), namespace.now());
        DataOnMdt.truncate(namespace, inode.inodeId(), 0); // nothing written unsettled under the old layout survives it
        namespace.putInode(updated);
        return new AttributesReply(updated.toAttributes());
    }
}
