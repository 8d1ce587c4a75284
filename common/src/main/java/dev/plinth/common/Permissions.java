package dev.plinth.common;

/** The POSIX access rule, in one place: owner, group, then other bits; root passes (but execute needs an x bit on files). */
public final class Permissions {
    public static final int READ = 4;
    public static final int WRITE = 2;
    public static final int EXECUTE = 1;

    private Permissions() {}

    /** Whether {@code caller} may access with {@code mask} (READ|WRITE|EXECUTE) a file with these owner and mode bits. */
    public static boolean allowed(Credentials caller, int mode, int uid, int gid, boolean directory, int mask) {
        if (caller.isRoot()) {
            return (mask & EXECUTE) == 0 || directory || (mode & 0111) != 0;
        }
        int bits;
        if (caller.uid() == uid) {
            bits = (mode >> 6) & 7;
        } else if (caller.inGroup(gid)) {
            bits = (mode >> 3) & 7;
        } else {
            bits = mode & 7;
        }
        return (bits & mask) == mask;
    }
}
