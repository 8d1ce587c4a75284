package dev.plinth.common;

/** What an inode is. Append-only: stored and sent by ordinal. */
public enum FileType {
    FILE,
    DIRECTORY,
    SYMLINK
}
