package dev.plinth.client.nio;

import dev.plinth.common.FileType;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.UserPrincipal;
import java.util.EnumSet;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/** An inode's attributes in java.nio's form; owners are numeric ids. */
record PlinthAttributes(Attributes attributes) implements PosixFileAttributes {
    private static final PosixFilePermission[] BITS = {
            PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
            PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
            PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ};

    record Id(String name) implements UserPrincipal, GroupPrincipal {
        @Override
        public String getName() {
            return name;
        }
    }

    static Set<PosixFilePermission> permissions(int mode) {
        Set<PosixFilePermission> result = EnumSet.noneOf(PosixFilePermission.class);
        for (int bit = 0; bit < BITS.length; bit++) {
            if ((mode & (1 << bit)) != 0) {
                result.add(BITS[bit]);
            }
        }
        return result;
    }

    static int mode(Set<PosixFilePermission> permissions) {
        int mode = 0;
        for (int bit = 0; bit < BITS.length; bit++) {
            if (permissions.contains(BITS[bit])) {
                mode |= 1 << bit;
            }
        }
        return mode;
    }

    private static FileTime time(long nanos) {
        return FileTime.from(nanos, TimeUnit.NANOSECONDS);
    }

    @Override
    public FileTime lastModifiedTime() {
        return time(attributes.mtimeNanos());
    }

    @Override
    public FileTime lastAccessTime() {
        return time(attributes.atimeNanos());
    }

    @Override
    public FileTime creationTime() {
        return time(attributes.ctimeNanos());
    }

    @Override
    public boolean isRegularFile() {
        return attributes.type() == FileType.FILE;
    }

    @Override
    public boolean isDirectory() {
        return attributes.type() == FileType.DIRECTORY;
    }

    @Override
    public boolean isSymbolicLink() {
        return attributes.type() == FileType.SYMLINK;
    }

    @Override
    public boolean isOther() {
        return attributes.type().special();
    }

    @Override
    public long size() {
        return attributes.sizeBytes();
    }

    @Override
    public Object fileKey() {
        return attributes.inodeId();
    }

    @Override
    public UserPrincipal owner() {
        return new Id(Integer.toString(attributes.uid()));
    }

    @Override
    public GroupPrincipal group() {
        return new Id(Integer.toString(attributes.gid()));
    }

    @Override
    public Set<PosixFilePermission> permissions() {
        return permissions(attributes.mode());
    }
}
