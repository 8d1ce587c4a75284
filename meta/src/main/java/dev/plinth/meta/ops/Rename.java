package dev.plinth.meta.ops;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.InodeId;
import dev.plinth.common.Names;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.DentryRecord;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.HandshakeMessages;
import dev.plinth.wire.messages.HandshakeMessages.Empty;
import dev.plinth.wire.messages.MetaMessages;

/**
 * rename(2): atomic (one write batch), replacing a compatible destination: a file replaces a
 * file, an empty directory replaces an empty directory. A directory may not move into itself
 * or below itself (EINVAL), found by walking the destination's ancestors.
 */
public final class Rename {
    private static final int DEPTH_MAX = 4096;

    private Rename() {}

    public static Empty apply(Namespace namespace, MetaMessages.Rename request) {
        Names.validateName(request.targetName());
        InodeRecord[] found = namespace.removableEntry(request.sourceParentId(), request.sourceName());
        InodeRecord sourceParent = found[0];
        InodeRecord source = found[1];
        DentryRecord sourceEntry = namespace.dentry(sourceParent.inodeId(), request.sourceName());
        InodeRecord targetParent = namespace.directory(request.targetParentId());
        namespace.check(targetParent, Namespace.WRITE | Namespace.EXECUTE);
        DentryRecord targetEntry = namespace.dentry(targetParent.inodeId(), request.targetName());
        if (targetEntry != null && targetEntry.inodeId() == sourceEntry.inodeId()) {
            if (request.noReplace()) {
                throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + request.targetName() + "'");
            }
            return HandshakeMessages.EMPTY;
        }
        boolean moveDirectory = source.isDirectory();
        boolean changesParent = sourceParent.inodeId() != targetParent.inodeId();
        if (moveDirectory) {
            checkNotIntoItself(namespace, source.inodeId(), targetParent.inodeId());
            if (changesParent) {
                namespace.check(source, Namespace.WRITE); // its ".." changes
            }
        }
        long now = namespace.now();
        if (targetEntry != null) {
            if (request.noReplace()) {
                throw new PlinthException(ErrorCode.ALREADY_EXISTS, "'" + request.targetName() + "'");
            }
            InodeRecord target = namespace.inode(targetEntry.inodeId());
            namespace.checkSticky(targetParent, target);
            if (moveDirectory && !target.isDirectory()) {
                throw new PlinthException(ErrorCode.NOT_A_DIRECTORY, "'" + request.targetName() + "'");
            }
            if (!moveDirectory && target.isDirectory()) {
                throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "'" + request.targetName() + "'");
            }
            if (target.isDirectory()) {
                Rmdir.removeEmptyDirectory(namespace, targetParent, request.targetName(), target);
            } else {
                removeReplacedFile(namespace, targetParent, request.targetName(), target, now);
            }
        }
        int linkDelta = moveDirectory ? 1 : 0;
        namespace.deleteDentry(sourceParent.inodeId(), request.sourceName());
        namespace.putInode(namespace.inode(sourceParent.inodeId()).withChildDelta(-1, -linkDelta, now));
        namespace.putDentry(targetParent.inodeId(), request.targetName(), sourceEntry);
        namespace.putInode(namespace.inode(targetParent.inodeId()).withChildDelta(1, linkDelta, now));
        InodeRecord moved = namespace.inode(source.inodeId());
        namespace.putInode(moveDirectory ? moved.withParent(targetParent.inodeId(), now)
                : moved.withTimes(moved.atimeNanos(), moved.mtimeNanos(), now));
        return HandshakeMessages.EMPTY;
    }

    /** Drops the entry of a file that a new one replaces (rename over it, or publish over it). */
    static void removeReplacedFile(Namespace namespace, InodeRecord parent, String name, InodeRecord target, long now) {
        namespace.deleteDentry(parent.inodeId(), name);
        namespace.putInode(namespace.inode(parent.inodeId()).withChildDelta(-1, 0, now));
        namespace.dropLink(target);
    }

    private static void checkNotIntoItself(Namespace namespace, long directoryId, long destinationId) {
        long current = destinationId;
        for (int depth = 0; depth < DEPTH_MAX; depth++) {
            if (current == directoryId) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "cannot move a directory into itself");
            }
            if (current == InodeId.ROOT) {
                return;
            }
            current = namespace.inode(current).parentId();
        }
        throw new IllegalStateException("directory tree deeper than " + DEPTH_MAX + ": parent chain is broken");
    }
}
