package dev.plinth.meta.ops;

import static dev.plinth.wire.messages.MetaMessages.SET_ATIME;
import static dev.plinth.wire.messages.MetaMessages.SET_GID;
import static dev.plinth.wire.messages.MetaMessages.SET_KILL_PRIVILEGES;
import static dev.plinth.wire.messages.MetaMessages.SET_MODE;
import static dev.plinth.wire.messages.MetaMessages.SET_MTIME;
import static dev.plinth.wire.messages.MetaMessages.SET_SIZE;
import static dev.plinth.wire.messages.MetaMessages.SET_THROUGH_WRITABLE_HANDLE;
import static dev.plinth.wire.messages.MetaMessages.SET_TIMES_NOW;
import static dev.plinth.wire.messages.MetaMessages.SET_UID;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.Layout;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;

/**
 * chmod, chown, truncate and utimens with the kernel's rules: only the owner (or root) changes
 * mode and explicit times; only root changes the owner; the owner may change the group to one
 * of its own groups; truncating needs write permission (or a handle open for writing). The
 * client has already cut the stripe objects on storage when it shrinks a file.
 *
 * <p>Set-user-ID and set-group-ID go as Linux lets them go (the mount leaves this to the file
 * system, FUSE's handle_killpriv): a chown by anyone, and a write or truncate by anyone but
 * root, clears set-user-ID, and set-group-ID where group-execute is set or the caller is not in
 * the file's group; a chmod by a caller
 * outside the file's group cannot set set-group-ID.
 */
public final class SetAttr {
    private SetAttr() {}

    public static AttributesReply apply(Namespace namespace, MetaMessages.SetAttr request) {
        InodeRecord inode = namespace.inode(request.inodeId());
        int mask = request.mask();
        long now = namespace.now();
        int mode = inode.mode();
        int uid = inode.uid();
        int gid = inode.gid();
        boolean root = namespace.caller().isRoot();
        if ((mask & SET_UID) != 0 && request.uid() != inode.uid()) {
            if (!root) {
                throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "only root changes a file's owner");
            }
            uid = request.uid();
        }
        if ((mask & SET_GID) != 0 && request.gid() != inode.gid()) {
            namespace.requireOwner(inode);
            if (!root && !namespace.caller().inGroup(request.gid())) {
                throw new PlinthException(ErrorCode.OPERATION_NOT_PERMITTED, "not a member of group " + request.gid());
            }
            gid = request.gid();
        }
        boolean inFileGroup = root || namespace.caller().inGroup(inode.gid());
        if ((mask & (SET_UID | SET_GID)) != 0 && inode.type() != FileType.DIRECTORY) {
            mode = withoutPrivileges(mode, inFileGroup);
        }
        if ((mask & (SET_KILL_PRIVILEGES | SET_SIZE)) != 0 && !root && inode.type() != FileType.DIRECTORY) {
            mode = withoutPrivileges(mode, inFileGroup);
        }
        if ((mask & SET_MODE) != 0) {
            int requested = request.mode() & InodeRecord.PERMISSION_BITS;
            boolean onlyClearsSetIds = (requested | 06000) == (inode.mode() | 06000) && (requested & ~inode.mode()) == 0;
            if (onlyClearsSetIds && !root && namespace.caller().uid() != inode.uid()) {
                // the kernel's own way to clear them before a write by another (without FUSE's handle_killpriv)
                namespace.check(inode, Namespace.WRITE);
            } else {
                namespace.requireOwner(inode);
            }
            mode = requested;
            if (!root && !namespace.caller().inGroup(gid) && inode.type() != FileType.DIRECTORY) {
                mode &= ~02000;
            }
        }
        InodeRecord updated = inode.withOwner(mode, uid, gid, now);
        if ((mask & SET_SIZE) != 0) {
            if (inode.isDirectory()) {
                throw new PlinthException(ErrorCode.IS_A_DIRECTORY, "truncate of a directory");
            }
            if (request.sizeBytes() != inode.sizeBytes()) {
                OpenClose.refuseIfEncrypted(inode);
                updated = updated.withFlags(Hsm.beforeDataChange(namespace, inode).flags());
            }
            if (inode.type() != FileType.FILE) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "truncate of a symlink");
            }
            if (request.sizeBytes() < 0 || request.sizeBytes() > Layout.FILE_SIZE_MAX) {
                throw new PlinthException(request.sizeBytes() < 0 ? ErrorCode.INVALID_ARGUMENT : ErrorCode.FILE_TOO_LARGE, "size " + request.sizeBytes());
            }
            if ((mask & SET_THROUGH_WRITABLE_HANDLE) == 0) {
                namespace.check(inode, Namespace.WRITE);
            }
            updated = updated.withSize(request.sizeBytes(), now);
            DataOnMdt.truncate(namespace, inode.inodeId(), request.sizeBytes());
        }
        if ((mask & (SET_ATIME | SET_MTIME)) != 0) {
            if ((mask & SET_TIMES_NOW) != 0) {
                if (!root && namespace.caller().uid() != inode.uid()) {
                    namespace.check(inode, Namespace.WRITE);
                }
            } else {
                namespace.requireOwner(inode);
            }
            long atime = (mask & SET_ATIME) == 0 ? updated.atimeNanos() : (mask & SET_TIMES_NOW) != 0 ? now : request.atimeNanos();
            long mtime = (mask & SET_MTIME) == 0 ? updated.mtimeNanos() : (mask & SET_TIMES_NOW) != 0 ? now : request.mtimeNanos();
            updated = updated.withTimes(atime, mtime, now);
        }
        namespace.putInode(updated);
        return new AttributesReply(updated.toAttributes());
    }

    /**
     * A mode after a write, truncate or chown: no set-user-ID, and no set-group-ID where
     * group-execute is set or the caller is outside the file's group (Linux's
     * setattr_should_drop_sgid since 6.2; before, set-group-ID without group-execute marked
     * mandatory locking and always stayed).
     */
    static int withoutPrivileges(int mode, boolean callerInFileGroup) {
        mode &= ~04000;
        boolean dropGroupId = (mode & 00010) != 0 || !callerInFileGroup;
        return dropGroupId ? mode & ~02000 : mode;
    }
}
