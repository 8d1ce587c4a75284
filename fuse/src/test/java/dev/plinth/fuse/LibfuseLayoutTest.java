package dev.plinth.fuse;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The struct offsets and constants in {@link Libfuse} against the C headers of the libfuse on
 * this machine: a small C program prints them, compiled with gcc against /usr/include/fuse3
 * (Debian libfuse3-dev, which .ci/run installs). A wrong offset would corrupt memory at run time.
 */
class LibfuseLayoutTest {
    @TempDir
    Path directory;

    private static final String PROBE = """
            #define FUSE_USE_VERSION 312
            #define _GNU_SOURCE
            #include <fuse_lowlevel.h>
            #include <stdio.h>
            #include <stddef.h>
            #include <string.h>
            #include <fcntl.h>
            #include <sys/file.h>
            #define O(n, s, f) printf("%s %zu\\n", n, offsetof(struct s, f))
            #define V(n, v) printf("%s %ld\\n", n, (long) (v))
            int main(void) {
              V("OPS_SIZE", sizeof(struct fuse_lowlevel_ops));
              O("OP_INIT", fuse_lowlevel_ops, init); O("OP_LOOKUP", fuse_lowlevel_ops, lookup);
              O("OP_FORGET", fuse_lowlevel_ops, forget); O("OP_GETATTR", fuse_lowlevel_ops, getattr);
              O("OP_SETATTR", fuse_lowlevel_ops, setattr); O("OP_READLINK", fuse_lowlevel_ops, readlink);
              O("OP_MKNOD", fuse_lowlevel_ops, mknod); O("OP_MKDIR", fuse_lowlevel_ops, mkdir);
              O("OP_UNLINK", fuse_lowlevel_ops, unlink); O("OP_RMDIR", fuse_lowlevel_ops, rmdir);
              O("OP_SYMLINK", fuse_lowlevel_ops, symlink); O("OP_RENAME", fuse_lowlevel_ops, rename);
              O("OP_LINK", fuse_lowlevel_ops, link); O("OP_OPEN", fuse_lowlevel_ops, open);
              O("OP_READ", fuse_lowlevel_ops, read); O("OP_WRITE", fuse_lowlevel_ops, write);
              O("OP_FLUSH", fuse_lowlevel_ops, flush); O("OP_RELEASE", fuse_lowlevel_ops, release);
              O("OP_FSYNC", fuse_lowlevel_ops, fsync); O("OP_OPENDIR", fuse_lowlevel_ops, opendir);
              O("OP_READDIR", fuse_lowlevel_ops, readdir); O("OP_RELEASEDIR", fuse_lowlevel_ops, releasedir);
              O("OP_FSYNCDIR", fuse_lowlevel_ops, fsyncdir); O("OP_STATFS", fuse_lowlevel_ops, statfs);
              O("OP_SETXATTR", fuse_lowlevel_ops, setxattr); O("OP_GETXATTR", fuse_lowlevel_ops, getxattr);
              O("OP_LISTXATTR", fuse_lowlevel_ops, listxattr); O("OP_REMOVEXATTR", fuse_lowlevel_ops, removexattr);
              O("OP_CREATE", fuse_lowlevel_ops, create); O("OP_GETLK", fuse_lowlevel_ops, getlk);
              O("OP_SETLK", fuse_lowlevel_ops, setlk); O("OP_FORGET_MULTI", fuse_lowlevel_ops, forget_multi);
              O("OP_FLOCK", fuse_lowlevel_ops, flock); O("OP_READDIRPLUS", fuse_lowlevel_ops, readdirplus);
              V("STAT_SIZE", sizeof(struct stat));
              O("ST_INO", stat, st_ino); O("ST_NLINK", stat, st_nlink); O("ST_MODE", stat, st_mode);
              O("ST_UID", stat, st_uid); O("ST_GID", stat, st_gid); O("ST_RDEV", stat, st_rdev); O("ST_SIZE", stat, st_size);
              O("ST_BLKSIZE", stat, st_blksize); O("ST_BLOCKS", stat, st_blocks);
              O("ST_ATIM", stat, st_atim); O("ST_MTIM", stat, st_mtim); O("ST_CTIM", stat, st_ctim);
              V("ENTRY_SIZE", sizeof(struct fuse_entry_param));
              O("ENTRY_INO", fuse_entry_param, ino); O("ENTRY_GENERATION", fuse_entry_param, generation);
              O("ENTRY_ATTR", fuse_entry_param, attr); O("ENTRY_ATTR_TIMEOUT", fuse_entry_param, attr_timeout);
              O("ENTRY_ENTRY_TIMEOUT", fuse_entry_param, entry_timeout);
              V("FI_SIZE", sizeof(struct fuse_file_info));
              O("FI_FLAGS", fuse_file_info, flags); O("FI_FH", fuse_file_info, fh); O("FI_LOCK_OWNER", fuse_file_info, lock_owner);
              struct fuse_file_info fi;
              memset(&fi, 0, sizeof fi); fi.direct_io = 1; V("FI_BIT_DIRECT_IO", ((unsigned char *) &fi)[4]);
              memset(&fi, 0, sizeof fi); fi.keep_cache = 1; V("FI_BIT_KEEP_CACHE", ((unsigned char *) &fi)[4]);
              memset(&fi, 0, sizeof fi); fi.flock_release = 1; V("FI_BIT_FLOCK_RELEASE", ((unsigned char *) &fi)[4]);
              V("STATVFS_SIZE", sizeof(struct statvfs));
              O("F_BSIZE", statvfs, f_bsize); O("F_FRSIZE", statvfs, f_frsize); O("F_BLOCKS", statvfs, f_blocks);
              O("F_BFREE", statvfs, f_bfree); O("F_BAVAIL", statvfs, f_bavail); O("F_FILES", statvfs, f_files);
              O("F_FFREE", statvfs, f_ffree); O("F_FAVAIL", statvfs, f_favail); O("F_NAMEMAX", statvfs, f_namemax);
              V("FLOCK_SIZE", sizeof(struct flock));
              O("L_TYPE", flock, l_type); O("L_WHENCE", flock, l_whence); O("L_START", flock, l_start);
              O("L_LEN", flock, l_len); O("L_PID", flock, l_pid);
              O("CTX_UID", fuse_ctx, uid); O("CTX_GID", fuse_ctx, gid); O("CTX_PID", fuse_ctx, pid);
              O("CONN_MAX_WRITE", fuse_conn_info, max_write); O("CONN_MAX_READ", fuse_conn_info, max_read);
              O("CONN_MAX_READAHEAD", fuse_conn_info, max_readahead); O("CONN_CAPABLE", fuse_conn_info, capable);
              O("CONN_WANT", fuse_conn_info, want); O("CONN_MAX_BACKGROUND", fuse_conn_info, max_background);
              O("CONN_CONGESTION_THRESHOLD", fuse_conn_info, congestion_threshold); O("CONN_TIME_GRAN", fuse_conn_info, time_gran);
              V("ARGS_SIZE", sizeof(struct fuse_args)); V("BUF_SIZE", sizeof(struct fuse_buf)); O("BUF_MEM", fuse_buf, mem);
              V("CAP_ASYNC_READ", FUSE_CAP_ASYNC_READ); V("CAP_POSIX_LOCKS", FUSE_CAP_POSIX_LOCKS);
              V("CAP_ATOMIC_O_TRUNC", FUSE_CAP_ATOMIC_O_TRUNC); V("CAP_FLOCK_LOCKS", FUSE_CAP_FLOCK_LOCKS);
              V("CAP_AUTO_INVAL_DATA", FUSE_CAP_AUTO_INVAL_DATA); V("CAP_READDIRPLUS", FUSE_CAP_READDIRPLUS);
              V("CAP_READDIRPLUS_AUTO", FUSE_CAP_READDIRPLUS_AUTO); V("CAP_ASYNC_DIO", FUSE_CAP_ASYNC_DIO);
              V("CAP_WRITEBACK_CACHE", FUSE_CAP_WRITEBACK_CACHE); V("CAP_PARALLEL_DIROPS", FUSE_CAP_PARALLEL_DIROPS);
              V("CAP_CACHE_SYMLINKS", FUSE_CAP_CACHE_SYMLINKS);
              V("SET_ATTR_MODE", FUSE_SET_ATTR_MODE); V("SET_ATTR_UID", FUSE_SET_ATTR_UID); V("SET_ATTR_GID", FUSE_SET_ATTR_GID);
              V("SET_ATTR_SIZE", FUSE_SET_ATTR_SIZE); V("SET_ATTR_ATIME", FUSE_SET_ATTR_ATIME); V("SET_ATTR_MTIME", FUSE_SET_ATTR_MTIME);
              V("SET_ATTR_ATIME_NOW", FUSE_SET_ATTR_ATIME_NOW); V("SET_ATTR_MTIME_NOW", FUSE_SET_ATTR_MTIME_NOW);
              V("O_WRONLY", O_WRONLY); V("RENAME_NOREPLACE", RENAME_NOREPLACE);
              V("RENAME_EXCHANGE", RENAME_EXCHANGE); V("F_RDLCK", F_RDLCK); V("F_WRLCK", F_WRLCK); V("F_UNLCK", F_UNLCK);
              V("LOCK_EX", LOCK_EX); V("LOCK_NB", LOCK_NB); V("LOCK_UN", LOCK_UN);
              return 0;
            }
            """;

    @Test
    void offsetsAndConstantsMatchTheHeaders() throws Exception {
        dev.plinth.testing.Prerequisites.require(dev.plinth.testing.Prerequisites.FUSE_HEADERS, dev.plinth.testing.Prerequisites.GCC);
        Path source = directory.resolve("probe.c");
        Files.writeString(source, PROBE);
        Path binary = directory.resolve("probe");
        String compiled = run("gcc", "-I/usr/include/fuse3", "-o", binary.toString(), source.toString());
        Map<String, Long> fromC = new HashMap<>();
        for (String line : run(binary.toString()).split("\n")) {
            String[] parts = line.trim().split(" ");
            fromC.put(parts[0], Long.parseLong(parts[1]));
        }
        assertThat(fromC).as("gcc said: %s", compiled).hasSizeGreaterThan(100);
        for (Map.Entry<String, Long> entry : fromC.entrySet()) {
            long inJava = Libfuse.class.getDeclaredField(entry.getKey()).getLong(null);
            assertThat(inJava).as("Libfuse.%s", entry.getKey()).isEqualTo(entry.getValue());
        }
    }

    private static String run(String... command) throws IOException, InterruptedException {
        Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertThat(process.waitFor(60, TimeUnit.SECONDS)).isTrue();
        assertThat(process.exitValue()).as("%s: %s", String.join(" ", command), output).isZero();
        return output;
    }
}
