package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.DentryRecord;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;

/** A hard link: another name for a file (never for a directory). */
public final class Link {
    private Link() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.Link request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        if (inode.isDirectory()) {
            throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "hard links to directories are not allowed");
        }
        if (inode.linkCount() == 0) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "file was removed");
        }
        if (inode.linkCount() >= Namespace.LINK_COUNT_MAX) {
            throw new PlinthException(ErrorCode.TOO_MANY_LINKS, "inode has " + inode.linkCount() + " links");
        }
        InodeRecord parent = NewEntry.writableParent(namespace, request.parentId(), request.name());
        if (namespace.dentry(parent.inodeId(), request.name()) != null) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + request.name() + "'");
        }
        long now = namespace.now();
        namespace.putDentry(parent.inodeId(), request.name(), new DentryRecord(inode.inodeId(), inode.type()));
        namespace.putInode(parent.withChildDelta(1, 0, now));
        InodeRecord linked = inode.withLinkCount(inode.linkCount() + 1, now);
        namespace.putInode(linked);
        return new AttributesReply(linked.toAttributes());
    }
}
