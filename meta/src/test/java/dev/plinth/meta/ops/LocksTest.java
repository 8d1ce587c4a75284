package dev.plinth.meta.ops;

import static dev.plinth.wire.messages.MetaMessages.LOCK_FLOCK;
import static dev.plinth.wire.messages.MetaMessages.LOCK_POSIX;
import static dev.plinth.wire.messages.MetaMessages.LOCK_READ;
import static dev.plinth.wire.messages.MetaMessages.LOCK_UNLOCK;
import static dev.plinth.wire.messages.MetaMessages.LOCK_WRITE;
import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.wire.messages.MetaMessages.FileLock;
import java.util.List;
import org.junit.jupiter.api.Test;

/** POSIX range arithmetic of an owner's locks: split, merge, replace, and other owners untouched. */
class LocksTest {
    private static FileLock lock(long owner, int type, long start, long end) {
        return new FileLock(1, owner, 100, LOCK_POSIX, type, start, end);
    }

    @Test
    void unlockInTheMiddleSplits() {
        List<FileLock> held = List.of(lock(1, LOCK_WRITE, 0, 100));
        assertThat(Locks.apply(held, lock(1, LOCK_UNLOCK, 40, 60)))
                .containsExactlyInAnyOrder(lock(1, LOCK_WRITE, 0, 40), lock(1, LOCK_WRITE, 60, 100));
    }

    @Test
    void touchingRangesOfOneTypeMerge() {
        List<FileLock> held = List.of(lock(1, LOCK_READ, 0, 10), lock(1, LOCK_READ, 20, 30));
        assertThat(Locks.apply(held, lock(1, LOCK_READ, 10, 20))).containsExactly(lock(1, LOCK_READ, 0, 30));
    }

    @Test
    void changingTheTypeOfPartOfARangeSplitsIt() {
        List<FileLock> held = List.of(lock(1, LOCK_READ, 0, 100));
        assertThat(Locks.apply(held, lock(1, LOCK_WRITE, 50, 150)))
                .containsExactlyInAnyOrder(lock(1, LOCK_READ, 0, 50), lock(1, LOCK_WRITE, 50, 150));
    }

    @Test
    void otherOwnersAndKindsAreLeftAlone() {
        FileLock other = lock(2, LOCK_READ, 0, 100);
        FileLock flock = new FileLock(1, 1, 100, LOCK_FLOCK, LOCK_WRITE, 0, Long.MAX_VALUE);
        List<FileLock> held = List.of(other, flock, lock(1, LOCK_READ, 0, 100));
        assertThat(Locks.apply(held, lock(1, LOCK_UNLOCK, 0, Long.MAX_VALUE))).containsExactlyInAnyOrder(other, flock);
    }
}
