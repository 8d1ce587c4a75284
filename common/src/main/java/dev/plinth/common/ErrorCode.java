package dev.plinth.common;

/**
 * The one list of errors in Plinth. Every boundary translates these once: POSIX errno at FUSE,
 * S3 error codes at the gateway, exit codes and one-line messages at the CLI, and numeric codes
 * on the wire. Codes are append-only: the wire carries {@link #wireCode()}.
 */
public enum ErrorCode {
    NOT_FOUND(1, 2, false, "no such file or directory"),
    ALREADY_EXISTS(2, 17, false, "file exists"),
    NOT_A_DIRECTORY(3, 20, false, "not a directory"),
    IS_A_DIRECTORY(4, 21, false, "is a directory"),
    DIRECTORY_NOT_EMPTY(5, 39, false, "directory not empty"),
    PERMISSION_DENIED(6, 13, false, "permission denied"),
    OPERATION_NOT_PERMITTED(7, 1, false, "operation not permitted"),
    INVALID_ARGUMENT(8, 22, false, "invalid argument"),
    NAME_TOO_LONG(9, 36, false, "file name too long"),
    NO_SPACE(10, 28, false, "no space left on device"),
    SYMLINK_LOOP(11, 40, false, "too many levels of symbolic links"),
    CROSS_DEVICE(12, 18, false, "invalid cross-device link"),
    IO_ERROR(13, 5, false, "input/output error"),
    CHECKSUM_MISMATCH(14, 5, false, "checksum mismatch: stored data is corrupt"),
    TIMED_OUT(15, 110, true, "timed out"),
    UNAVAILABLE(16, 11, true, "service unavailable, try again"),
    PROTOCOL_ERROR(17, 71, false, "protocol error"),
    VERSION_MISMATCH(18, 71, false, "protocol version not supported"),
    AUTHENTICATION_FAILED(19, 13, false, "authentication failed"),
    NO_ATTRIBUTE(20, 61, false, "no such attribute"),
    STALE_HANDLE(21, 116, false, "stale file handle"),
    NOT_SUPPORTED(22, 95, false, "operation not supported"),
    RESULT_TOO_LARGE(23, 34, false, "result too large"),
    FILE_TOO_LARGE(24, 27, false, "file too large"),
    TOO_MANY_LINKS(25, 31, false, "too many links"),
    NOT_LEADER(26, 11, true, "not the leader, retry elsewhere"),
    BUSY(27, 16, true, "resource busy"),
    INTERNAL(28, 5, false, "internal error"),
    BAD_DESCRIPTOR(29, 9, false, "bad file descriptor"),
    READ_ONLY(30, 30, false, "read-only file system"),
    TOO_MANY_LOCKS(31, 37, false, "no locks available"),
    INTERRUPTED(32, 4, false, "interrupted"),
    WOULD_BLOCK(33, 11, false, "resource temporarily unavailable"),
    /** The sender's chain table is older or newer than the receiver's: fetch the map and resend. */
    CHAIN_CHANGED(34, 11, true, "chain membership changed, retry with the current chain table"),
    /** A replica holds a write its chain has not committed yet: read from the chain's tail. */
    NOT_COMMITTED(35, 11, true, "replica holds an uncommitted version, read from the tail"),
    /** A forwarded write found the receiver missing an earlier version: send the whole chunk. */
    CHUNK_BEHIND(36, 11, true, "replica missed an earlier version of the chunk"),
    /** A role that has started to listen but cannot serve yet (a storage node not yet registered with mgmt): try again. */
    NOT_READY(37, 11, true, "the server is starting and cannot serve this yet, try again"),
    /** A change conditional on what a name held found it holding something else (S3's If-Match lost a race). */
    CHANGED(38, 116, false, "the entry changed since it was read"),
    /** The file's bytes are only in its archive (HSM released): clients restore it, then try again. */
    RELEASED(39, 61, false, "the file's data is in the archive and must be restored first"),
    /** A released file whose restore failed: its archived copy is missing or damaged, or the archive cannot be read. EIO to applications. */
    ARCHIVE_UNREADABLE(40, 5, false, "the file's archived copy cannot be read back"),
    /** A released file was not restored within hsm.restore-wait-millis: EIO to applications, 503 to S3 clients (try again later). */
    RESTORE_PENDING(41, 5, false, "the file is still being restored from its archive");

    private static final ErrorCode[] BY_WIRE_CODE = new ErrorCode[64];

    static {
        for (ErrorCode code : values()) {
            if (BY_WIRE_CODE[code.wireCode] != null) {
                throw new AssertionError("duplicate wire code " + code.wireCode);
            }
            BY_WIRE_CODE[code.wireCode] = code;
        }
    }

    private final int wireCode;
    private final int errno;
    private final boolean retryable;
    private final String description;

    ErrorCode(int wireCode, int errno, boolean retryable, String description) {
        this.wireCode = wireCode;
        this.errno = errno;
        this.retryable = retryable;
        this.description = description;
    }

    public int wireCode() {
        return wireCode;
    }

    /** The POSIX errno a file system call returns for this error (Linux numbering). */
    public int errno() {
        return errno;
    }

    /** Whether the same request may succeed if sent again, possibly to another server. */
    public boolean retryable() {
        return retryable;
    }

    public String description() {
        return description;
    }

    /** Decodes a wire code; an unknown code from a newer peer becomes {@link #INTERNAL}. */
    public static ErrorCode fromWireCode(int wireCode) {
        if (wireCode <= 0 || wireCode >= BY_WIRE_CODE.length || BY_WIRE_CODE[wireCode] == null) {
            return INTERNAL;
        }
        return BY_WIRE_CODE[wireCode];
    }
}
