package dev.plinth.client;

import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.AttributesReply;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The calls that serve an object store over the namespace, as the S3 gateway does: lookups that
 * bring an extended attribute and the Data-on-MDT bytes along (a small GET in one query), whole
 * small objects made in one change, reads of a file just looked up without an open, listings
 * with each entry's attribute. Kept apart from {@link PlinthClient}'s file-system calls, which
 * applications use; obtained from {@link PlinthClient#objects()}. Thread-safe.
 */
public final class ObjectAccess {
    private final PlinthClient client;

    ObjectAccess(PlinthClient client) {
        this.client = client;
    }

    /** stat and getxattr in one request: the attributes, and {@code xattrName}'s value (null where absent or unreadable). */
    public AttributesReply statWithXattr(String path, String xattrName) {
        return PlinthClient.atPath(path, () -> client.meta(new MetaMessages.ResolvePath(client.header(), path, true, xattrName)));
    }

    /**
     * As {@link #statWithXattr}, and the file's Data-on-MDT part too (all of a file that short) if
     * it is at most {@code fileBytesMax} long and the caller may read it
     * ({@link AttributesReply#fileBytes()}): attributes, xattr and bytes from one snapshot, in one
     * query. A longer file's part is for {@link #openLookedUp}.
     */
    public AttributesReply statWithXattrAndBytes(String path, String xattrName, int fileBytesMax) {
        AttributesReply reply = PlinthClient.atPath(path, () -> client.meta(new MetaMessages.ResolvePath(client.header(), path, true, xattrName, fileBytesMax)));
        if (reply.fileBytes() != null && reply.fileBytes().length == reply.attributes().sizeBytes()) {
            client.jobStats().read(client.currentJob(), reply.fileBytes().length); // the whole file was read (a part is counted when a handle reads it)
        }
        return reply;
    }

    /** A readdir page with attributes and each entry's {@code xattrName} (null where absent or unreadable). */
    public MetaMessages.ReadDirPlusReply readDirPlus(long inodeId, String afterName, int limit, String xattrName) {
        return client.meta(new MetaMessages.ReadDirPlus(client.header(), inodeId, afterName, limit, xattrName));
    }

    /**
     * A read-only handle on a file that a lookup has just found ({@code lookupSentNanos}: the
     * client's clock's nanoTime before the lookup went out), with no metadata change to open or close it
     * while its reads are quick. What it reads within half of
     * {@link MetaMessages#REMOVED_FILE_KEPT_MILLIS} after the lookup is the file's even if the
     * file is removed meanwhile, since its chunks outlive it at least that long; a reader still
     * reading after that opens the file then, once (counted: the file stays readable until the
     * handle closes), or fails with NOT_FOUND if it is gone. For servers answering whole reads
     * of files they looked up (the S3 gateway), where an open and a close were two of the three
     * metadata requests of a GET and the only changes. {@code mdtPart}: the file's Data-on-MDT
     * part as the lookup gave it ({@link #statWithXattrAndBytes}; null: none), which the handle
     * then reads instead of asking the metadata service, and which is the file's even if it was
     * removed since (that part goes with the inode, not the chunks).
     */
    public PlinthFile openLookedUp(Attributes attributes, byte[] mdtPart, long lookupSentNanos) {
        PlinthFile file = client.openUncounted(attributes);
        file.readWithoutOpen(new PlinthFile.LookedUp(lookupSentNanos + TimeUnit.MILLISECONDS.toNanos(MetaMessages.REMOVED_FILE_KEPT_MILLIS / 2), mdtPart));
        return file;
    }

    /**
     * Opens a file for reading its bytes as they are stored, encrypted or not (counted as an open):
     * for copying an encrypted object's ciphertext (a multipart upload's parts into the object), or
     * reading it with a key the caller brings ({@link PlinthFile#decryptWith}).
     */
    public PlinthFile openStored(long inodeId) {
        return client.openStored(inodeId);
    }

    /**
     * Creates a file of {@code bytes} in directory {@code parentId} and names it {@code name} (over
     * an existing file unless {@code noReplace}) with {@code mtimeNanos} and {@code xattrs}, as one
     * metadata change ({@link MetaMessages.PutWhole}). The bytes must fit in the directory's
     * Data-on-MDT part (INVALID_ARGUMENT otherwise; write them through {@link PlinthClient#createUnnamed} then).
     */
    public Attributes putWhole(long parentId, String name, int mode, byte[] bytes, long mtimeNanos, List<MetaMessages.Xattr> xattrs,
                               boolean noReplace) {
        return putWhole(parentId, name, mode, bytes, mtimeNanos, xattrs, noReplace, 0);
    }

    /** As above; with {@code onlyReplacing} not 0, {@code name} must name that inode now (else CHANGED). */
    public Attributes putWhole(long parentId, String name, int mode, byte[] bytes, long mtimeNanos, List<MetaMessages.Xattr> xattrs,
                               boolean noReplace, long onlyReplacing) {
        Attributes attributes = client.<AttributesReply>meta(new MetaMessages.PutWhole(client.header(), parentId, name, mode, null, bytes, mtimeNanos,
                xattrs, noReplace, onlyReplacing)).attributes();
        client.jobStats().write(client.currentJob(), bytes.length);
        return attributes;
    }
}
