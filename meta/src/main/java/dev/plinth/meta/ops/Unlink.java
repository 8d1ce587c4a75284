package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
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
        DentryRecord entry = namespace.dentry(request.parentId(), request.name());
        if (entry != null && namespace.remoteEntry(entry)) { // a directory on another MDT
            throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "'" + request.name() + "'");
        }
        InodeRecord[] found = namespace.removableEntry(request.parentId(), request.name());
        InodeRecord parent = found[0];
        InodeRecord victim = found[1];
        if (victim.isDirectory()) {
            throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "'" + request.name() + "'");
        }
        namespace.deleteDentry(parent.inodeId(), request.name());
        namespace.putInode(parent.withChildDelta(-1, 0, namespace.now()));
        namespace.dropLink(victim);
        return HandshakeMessages.EMPTY;
    }
}
