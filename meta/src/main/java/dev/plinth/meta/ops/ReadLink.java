package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.ReadLinkReply;

public final class ReadLink {
    private ReadLink() {}

    public static ReadLinkReply apply(Namespace namespace, MetaMessages.ReadLink request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        if (inode.type() != FileType.SYMLINK) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "not a symbolic link");
        }
        return new ReadLinkReply(inode.symlinkTarget());
    }
}
