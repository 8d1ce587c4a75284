package dev.plinth.meta.store;

import dev.plinth.common.FileType;

/** A directory entry's value: the inode it names and that inode's type (for readdir without lookups). */
public record DentryRecord(long inodeId, FileType type) {}
