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
        if (targetEntry != null && (targetEntry.pending() || RemoteEntries.marked(namespace, targetParent.inodeId(), request.targetName()))) {
            throw new PlinthException(ErrorCode.BUSY, "'" + request.targetName() + "' is being changed on another MDT");
        }
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

    /**
     * renameat2's RENAME_EXCHANGE: each name then names the other's inode, in one write batch.
     * Both names must exist; each is checked as a rename of it would be (write and search on its
     * parent, the sticky rule, write on a directory whose ".." changes, no directory into its own
     * subtree); entry counts stay, and a directory that changes parent moves its link with it.
     */
    public static Empty exchange(Namespace namespace, MetaMessages.Exchange request) {
        InodeRecord[] first = namespace.removableEntry(request.firstParentId(), request.firstName());
        InodeRecord[] second = namespace.removableEntry(request.secondParentId(), request.secondName());
        DentryRecord firstEntry = namespace.dentry(first[0].inodeId(), request.firstName());
        DentryRecord secondEntry = namespace.dentry(second[0].inodeId(), request.secondName());
        if (firstEntry.inodeId() == secondEntry.inodeId()) {
            return HandshakeMessages.EMPTY; // two links of one inode: nothing changes
        }
        long firstParentId = first[0].inodeId();
        long secondParentId = second[0].inodeId();
        boolean changesParent = firstParentId != secondParentId;
        if (changesParent) {
            for (InodeRecord[] side : new InodeRecord[][] {first, second}) {
                InodeRecord inode = side[1];
                if (inode.isDirectory()) {
                    namespace.check(inode, Namespace.WRITE); // its ".." changes
                }
            }
            if (first[1].isDirectory()) {
                checkNotIntoItself(namespace, first[1].inodeId(), secondParentId);
            }
            if (second[1].isDirectory()) {
                checkNotIntoItself(namespace, second[1].inodeId(), firstParentId);
            }
        }
        long now = namespace.now();
        namespace.putDentry(firstParentId, request.firstName(), secondEntry);
        namespace.putDentry(secondParentId, request.secondName(), firstEntry);
        int directoriesIntoFirst = (second[1].isDirectory() ? 1 : 0) - (first[1].isDirectory() ? 1 : 0);
        if (changesParent) {
            namespace.putInode(namespace.inode(firstParentId).withChildDelta(0, directoriesIntoFirst, now));
            namespace.putInode(namespace.inode(secondParentId).withChildDelta(0, -directoriesIntoFirst, now));
        } else {
            namespace.putInode(namespace.inode(firstParentId).withChildDelta(0, 0, now));
        }
        for (InodeRecord inode : new InodeRecord[] {first[1], second[1]}) {
            InodeRecord current = namespace.inode(inode.inodeId());
            long newParentId = inode == first[1] ? secondParentId : firstParentId;
            namespace.putInode(current.isDirectory() ? current.withParent(newParentId, now)
                    : current.withTimes(current.atimeNanos(), current.mtimeNanos(), now));
        }
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
