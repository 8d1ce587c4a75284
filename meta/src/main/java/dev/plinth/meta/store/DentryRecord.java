package dev.plinth.meta.store;

import dev.plinth.common.FileType;

/** A directory entry's value: the inode it names and that inode's type (for readdir without lookups). */
public record DentryRecord(long inodeId, FileType type) {
    /** The inode id of a name reserved for a directory that another MDT is making (an open intent; not yet there). */
    public static final long PENDING = 0;

    public boolean pending() {
        return inodeId == PENDING;
    }
}
