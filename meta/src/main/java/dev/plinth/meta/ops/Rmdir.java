package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.HandshakeMessages.Empty;
import dev.plinth.wire.messages.MetaMessages;

public final class Rmdir {
    private Rmdir() {}

    public static Empty apply(Namespace namespace, MetaMessages.Rmdir request) {
        InodeRecord[] found = namespace.removableEntry(request.parentId(), request.name());
        InodeRecord parent = found[0];
        InodeRecord victim = found[1];
        if (!victim.isDirectory()) {
            throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, "'" + request.name() + "'");
        }
        removeEmptyDirectory(namespace, parent, request.name(), victim);
        return HandshakeMessages.EMPTY;
    }

    /** Removes directory {@code victim}, named {@code name} in {@code parent}; fails if it has entries. */
    static void removeEmptyDirectory(Namespace namespace, InodeRecord parent, String name, InodeRecord victim) {
        if (!namespace.scan(MetaKeys.id(MetaKeys.DENTRY, victim.inodeId()), null, 1).isEmpty()) {
            throw new PlinthException(ErrorCode.DIRECTORY_NOT_EMPTY, "'" + name + "'");
        }
        namespace.deleteDentry(parent.inodeId(), name);
        namespace.putInode(namespace.inode(parent.inodeId()).withChildDelta(-1, -1, namespace.now()));
        namespace.removeInode(victim);
    }
}
