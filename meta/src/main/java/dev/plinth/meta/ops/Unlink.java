package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.Names;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.DentryRecord;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.HandshakeMessages.Empty;
import dev.plinth.wire.messages.MetaMessages;

/** Removes a name of a file or symlink; the data goes with the last link and the last close. */
public final class Unlink {
    private Unlink() {}

    public static Empty apply(Namespace namespace, MetaMessages.Unlink request) {
        Names.validateName(request.name());
        InodeRecord parent = namespace.directory(request.parentId());
        namespace.check(parent, Namespace.WRITE | Namespace.EXECUTE);
        DentryRecord entry = namespace.dentry(parent.inodeId(), request.name());
        if (entry == null) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "'" + request.name() + "'");
        }
        InodeRecord victim = namespace.inode(entry.inodeId());
        if (victim.isDirectory()) {
            throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "'" + request.name() + "'");
        }
        namespace.checkSticky(parent, victim);
        namespace.deleteDentry(parent.inodeId(), request.name());
        namespace.putInode(parent.withChildDelta(-1, 0, namespace.now()));
        namespace.dropLink(victim);
        return HandshakeMessages.EMPTY;
    }
}
