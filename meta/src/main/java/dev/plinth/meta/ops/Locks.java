package dev.plinth.meta.ops;

import static dev.plinth.wire.messages.MetaMessages.LOCK_FLOCK;
import static dev.plinth.wire.messages.MetaMessages.LOCK_POSIX;
import static dev.plinth.wire.messages.MetaMessages.LOCK_READ;
import static dev.plinth.wire.messages.MetaMessages.LOCK_UNLOCK;
import static dev.plinth.wire.messages.MetaMessages.LOCK_WRITE;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.meta.Namespace;
import dev.plinth.meta.store.LockList;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.meta.store.MetaStore;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.FileLock;
import dev.plinth.wire.messages.MetaMessages.LockReply;
import java.util.ArrayList;
import java.util.List;

/**
 * flock and fcntl locks, held in the namespace so that every mount of the cluster sees the same
 * locks (as Lustre's {@code flock} mount option gives). A lock belongs to an owner within a
 * client session; it ends when its owner unlocks, or with the session (a dead client's lease).
 *
 * <p>POSIX semantics: an owner's locks never conflict with its own; setting a lock over a range
 * replaces the owner's locks there (splitting them), and touching ranges of the same type merge.
 * Read locks share, write locks exclude; POSIX and flock locks are independent, as on Linux.
 */
public final class Locks {
    /** More locks than this on one file is a runaway client, answered with ENOLCK. */
    static final int LOCKS_PER_FILE_MAX = 10_000;

    private Locks() {}

    public static LockReply set(Namespace namespace, MetaMessages.SetLock request) {
        FileLock lock = validated(request.lock(), namespace.header().clientId());
        namespace.inode(request.inodeId()); // exists
        Sessions.requireSession(namespace, lock.clientId());
        List<FileLock> held = load(namespace, request.inodeId());
        if (lock.type() != LOCK_UNLOCK) {
            FileLock conflict = conflict(held, lock);
            if (conflict != null) {
                return new LockReply(List.of(conflict));
            }
        }
        List<FileLock> updated = apply(held, lock);
        if (updated.size() > LOCKS_PER_FILE_MAX) {
            throw new PlinthException(ErrorCode.TOO_MANY_LOCKS, "more than " + LOCKS_PER_FILE_MAX + " locks on one file");
        }
        store(namespace, request.inodeId(), updated, lock.clientId());
        return new LockReply(List.of());
    }

    public static LockReply get(Namespace namespace, MetaMessages.GetLock request) {
        FileLock lock = validated(request.lock(), namespace.header().clientId());
        namespace.inode(request.inodeId());
        FileLock conflict = lock.type() == LOCK_UNLOCK ? null : conflict(load(namespace, request.inodeId()), lock);
        return new LockReply(conflict == null ? List.of() : List.of(conflict));
    }

    /** Releases every lock a session holds (the session ended or expired). */
    static void releaseSession(Namespace namespace, long clientId) {
        for (byte[][] pair : namespace.scan(MetaKeys.id(MetaKeys.LOCKS_BY_SESSION, clientId), null, Integer.MAX_VALUE)) {
            long inodeId = MetaKeys.secondId(pair[0]);
            List<FileLock> remaining = new ArrayList<>();
            for (FileLock lock : load(namespace, inodeId)) {
                if (lock.clientId() != clientId) {
                    remaining.add(lock);
                }
            }
            store(namespace, inodeId, remaining, clientId);
        }
    }

    private static FileLock validated(FileLock lock, long clientId) {
        if (lock == null || (lock.kind() != LOCK_POSIX && lock.kind() != LOCK_FLOCK)
                || (lock.type() != LOCK_READ && lock.type() != LOCK_WRITE && lock.type() != LOCK_UNLOCK)
                || lock.start() < 0 || lock.end() <= lock.start()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "bad lock " + lock);
        }
        long start = lock.kind() == LOCK_FLOCK ? 0 : lock.start();
        long end = lock.kind() == LOCK_FLOCK ? MetaMessages.LOCK_TO_END : lock.end();
        return new FileLock(clientId, lock.owner(), lock.pid(), lock.kind(), lock.type(), start, end);
    }

    private static boolean sameOwner(FileLock a, FileLock b) {
        return a.clientId() == b.clientId() && a.owner() == b.owner() && a.kind() == b.kind();
    }

    private static FileLock conflict(List<FileLock> held, FileLock wanted) {
        for (FileLock lock : held) {
            if (lock.kind() == wanted.kind() && !sameOwner(lock, wanted)
                    && lock.start() < wanted.end() && wanted.start() < lock.end()
                    && (lock.type() == LOCK_WRITE || wanted.type() == LOCK_WRITE)) {
                return lock;
            }
        }
        return null;
    }

    /** The owner's locks with [start, end) replaced by {@code lock} (nothing, for an unlock), merged with touching ones of its type. */
    static List<FileLock> apply(List<FileLock> held, FileLock lock) {
        List<FileLock> result = new ArrayList<>();
        long start = lock.start();
        long end = lock.end();
        for (FileLock other : held) {
            if (!sameOwner(other, lock)) {
                result.add(other);
                continue;
            }
            boolean touches = other.start() <= end && start <= other.end();
            if (lock.type() != LOCK_UNLOCK && other.type() == lock.type() && touches) {
                start = Math.min(start, other.start()); // merge
                end = Math.max(end, other.end());
                continue;
            }
            if (other.end() <= lock.start() || other.start() >= lock.end()) {
                result.add(other); // apart
                continue;
            }
            if (other.start() < lock.start()) {
                result.add(withRange(other, other.start(), lock.start()));
            }
            if (other.end() > lock.end()) {
                result.add(withRange(other, lock.end(), other.end()));
            }
        }
        if (lock.type() != LOCK_UNLOCK) {
            result.add(withRange(lock, start, end));
        }
        return result;
    }

    private static FileLock withRange(FileLock lock, long start, long end) {
        return new FileLock(lock.clientId(), lock.owner(), lock.pid(), lock.kind(), lock.type(), start, end);
    }

    private static List<FileLock> load(Namespace namespace, long inodeId) {
        byte[] value = namespace.getRaw(MetaKeys.id(MetaKeys.LOCKS, inodeId));
        return value == null ? List.of() : MetaStore.decode(LockList.class, value).locks();
    }

    /** Writes an inode's locks, and whether {@code clientId} still holds any there. */
    private static void store(Namespace namespace, long inodeId, List<FileLock> locks, long clientId) {
        byte[] key = MetaKeys.id(MetaKeys.LOCKS, inodeId);
        if (locks.isEmpty()) {
            namespace.delete(key);
        } else {
            namespace.put(key, MetaStore.encode(new LockList(locks)));
        }
        byte[] sessionKey = MetaKeys.twoIds(MetaKeys.LOCKS_BY_SESSION, clientId, inodeId);
        if (locks.stream().anyMatch(lock -> lock.clientId() == clientId)) {
            namespace.put(sessionKey, new byte[0]);
        } else {
            namespace.delete(sessionKey);
        }
    }
}
