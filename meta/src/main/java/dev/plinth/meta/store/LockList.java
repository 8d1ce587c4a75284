package dev.plinth.meta.store;

import dev.plinth.wire.messages.MetaMessages.FileLock;
import java.util.List;

/** The locks held on one inode, by every client: stored under {@link MetaKeys#LOCKS}. */
public record LockList(List<FileLock> locks) {
    public LockList {
        locks = List.copyOf(locks);
    }
}
