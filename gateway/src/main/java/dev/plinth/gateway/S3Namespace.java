package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.Permissions;
import dev.plinth.common.PlinthException;
import dev.plinth.common.codec.RecordCodec;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.nio.charset.StandardCharsets;
import java.util.HexFormat;
import java.util.List;
import java.util.regex.Pattern;

/**
 * How S3 names map onto the Plinth namespace: bucket {@code b} is the directory
 * {@code ROOT/b}, object {@code a/b/c} the file {@code ROOT/b/a/b/c}, and a key ending in '/' an
 * (empty) directory. Names that begin with {@value #HIDDEN_PREFIX} are the gateway's own and are
 * neither listed nor accepted as keys: multipart uploads in progress live in
 * {@code ROOT/.plinth-s3-uploads/BUCKET/ID}, outside every bucket, where users of the mount can
 * neither list nor write them (root's directories, mode 0711; each upload's own directory its
 * initiator's, 0700). Requests act as their key's uid/gid ({@link PlinthClient#CALLER}); only the
 * gateway's own bookkeeping is done as root: making a bucket's or an upload's directory in a
 * directory that is root's, then handing it to the caller ({@link #mkdirOwnedByCaller}).
 */
final class S3Namespace {
    static final String HIDDEN_PREFIX = ".plinth-s3-";
    static final String UPLOADS_DIRECTORY = HIDDEN_PREFIX + "uploads";
    static final int KEY_BYTES_MAX = 1024;
    private static final Pattern BUCKET_NAME = Pattern.compile("[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]");
    private static final Pattern IPV4_ADDRESS = Pattern.compile("\\d+\\.\\d+\\.\\d+\\.\\d+");

    private final PlinthClient client;
    private final String root;
    private final ServerSideEncryption.Channel channel;

    S3Namespace(PlinthClient client, String root, ServerSideEncryption.Channel channel) {
        this.client = client;
        this.root = root.equals("/") ? "" : root.replaceAll("/+$", "");
        this.channel = channel;
    }

    /** Where requests come from, for what SSE-C allows. */
    ServerSideEncryption.Channel channel() {
        return channel;
    }

    PlinthClient client() {
        return client;
    }

    static boolean validBucketName(String bucket) {
        return BUCKET_NAME.matcher(bucket).matches() && !bucket.contains("..") && !IPV4_ADDRESS.matcher(bucket).matches();
    }

    /** The directory of a bucket. */
    String bucketPath(String bucket) {
        return root + "/" + bucketName(bucket);
    }

    String rootPath() {
        return root.isEmpty() ? "/" : root;
    }

    /** The directory of a bucket's multipart uploads in progress (outside the bucket). */
    String uploadsPath(String bucket) {
        return root + "/" + UPLOADS_DIRECTORY + "/" + bucketName(bucket);
    }

    private static String bucketName(String bucket) {
        if (!validBucketName(bucket)) {
            throw new S3Exception(S3Error.INVALID_BUCKET_NAME, "bucket names are 3-63 of a-z 0-9 . -, starting and ending with a letter or digit");
        }
        return bucket;
    }

    /** Runs {@code work} as root: the gateway's own bookkeeping, never an object's bytes or a caller's change. */
    <T> T asRoot(java.util.concurrent.Callable<T> work) {
        try {
            return ScopedValue.where(PlinthClient.CALLER, Credentials.ROOT).call(work::call);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * Makes a directory owned by the caller in a parent that is root's (a bucket in the root,
     * which S3 lets any key create; an upload's directory), with {@code xattrs} set on it first.
     * Made as root, then given to the caller; removed again if that fails.
     */
    Attributes mkdirOwnedByCaller(String path, int mode, List<MetaMessages.Xattr> xattrs) {
        Credentials caller = client.caller();
        return asRoot(() -> {
            Attributes made = client.mkdir(path, mode);
            try {
                for (MetaMessages.Xattr xattr : xattrs) {
                    client.setXattr(made.inodeId(), xattr.name(), xattr.value(), 0);
                }
                if (made.uid() == caller.uid() && made.gid() == caller.gid()) {
                    return made;
                }
                return client.setAttr(made.inodeId(), MetaMessages.SET_UID | MetaMessages.SET_GID, 0, caller.uid(), caller.gid(), 0, 0, 0);
            } catch (RuntimeException e) {
                try {
                    client.delete(path);
                } catch (PlinthException removeFailed) {
                    e.addSuppressed(removeFailed);
                }
                throw e;
            }
        });
    }

    /** The path of an object; rejects keys that cannot be a path inside the bucket. */
    String objectPath(String bucket, String key) {
        checkKey(key);
        String path = bucketPath(bucket) + "/" + key;
        return path.endsWith("/") ? path.substring(0, path.length() - 1) : path;
    }

    static void checkKey(String key) {
        if (key == null || key.isEmpty()) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "the object key is empty");
        }
        if (key.getBytes(StandardCharsets.UTF_8).length > KEY_BYTES_MAX) {
            throw new S3Exception(S3Error.KEY_TOO_LONG, "object keys are at most " + KEY_BYTES_MAX + " bytes");
        }
        String body = key.endsWith("/") ? key.substring(0, key.length() - 1) : key;
        for (String component : body.split("/", -1)) {
            if (component.isEmpty() || component.equals(".") || component.equals("..") || component.indexOf('\0') >= 0
                    || component.startsWith(HIDDEN_PREFIX)) {
                throw new S3Exception(S3Error.INVALID_ARGUMENT, "the key '" + key + "' has an empty, '.', '..' or reserved path component"
                        + " (keys name files: they may not start with '/', hold '//' or leave the bucket)");
            }
            if (component.getBytes(StandardCharsets.UTF_8).length > 255) {
                throw new S3Exception(S3Error.KEY_TOO_LONG, "each '/'-separated part of a key is at most 255 bytes");
            }
        }
    }

    /** The attributes of a bucket's directory; NoSuchBucket if there is none. */
    /** A bucket the caller may reach as {@code access} asks ({@link Permissions#READ} to list, {@link Permissions#EXECUTE} to reach keys), else AccessDenied. */
    Attributes bucket(String bucket, int access) {
        Attributes attributes = bucket(bucket);
        if (!Permissions.allowed(client.caller(), attributes.mode(), attributes.uid(), attributes.gid(), true, access)) {
            throw new S3Exception(S3Error.ACCESS_DENIED, "permission denied");
        }
        return attributes;
    }

    Attributes bucket(String bucket) {
        try {
            Attributes attributes = client.stat(bucketPath(bucket));
            if (!attributes.isDirectory()) {
                throw new S3Exception(S3Error.NO_SUCH_BUCKET, "the bucket '" + bucket + "' does not exist");
            }
            return attributes;
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.NOT_A_DIRECTORY) {
                throw new S3Exception(S3Error.NO_SUCH_BUCKET, "the bucket '" + bucket + "' does not exist");
            }
            throw translate(e);
        }
    }

    /**
     * An object's file and its S3 record (null if it has none), from one lookup; {@code bytes}: its
     * file's Data-on-MDT part when asked for (else null), all of the object when {@link #whole};
     * {@code lookupSentNanos}: System.nanoTime before the lookup went out
     * ({@link dev.plinth.client.PlinthClient#openLookedUp}).
     */
    record Found(Attributes attributes, ObjectRecord record, byte[] bytes, long lookupSentNanos) {
        /** Whether the lookup brought all of the object's bytes. */
        boolean whole() {
            return bytes != null && bytes.length == attributes.sizeBytes();
        }
    }

    /** An object's file and record, or null if there is no such object (the bucket exists). */
    Found findObject(String bucket, String key) {
        return findObject(bucket, key, 0);
    }

    /** As above, with its file's Data-on-MDT part when that is at most {@code bytesMax} long: all of a small object, a GET in one query. */
    Found findObject(String bucket, String key, int bytesMax) {
        String path = objectPath(bucket, key);
        long sentNanos = client.clock().nanoTime();
        try {
            MetaMessages.AttributesReply reply = bytesMax > 0 ? client.objects().statWithXattrAndBytes(path, ObjectRecord.XATTR, bytesMax)
                    : client.objects().statWithXattr(path, ObjectRecord.XATTR);
            Attributes attributes = reply.attributes();
            if (key.endsWith("/") ? attributes.isDirectory() : attributes.type() == FileType.FILE) {
                return new Found(attributes, ObjectRecord.decode(reply.xattrValue()), reply.fileBytes(), sentNanos);
            }
            return null;
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.NOT_A_DIRECTORY) {
                bucket(bucket); // NoSuchBucket rather than NoSuchKey when that is what is missing
                return null;
            }
            throw translate(e);
        }
    }

    Found object(String bucket, String key) {
        return object(bucket, key, 0);
    }

    Found object(String bucket, String key, int bytesMax) {
        Found found = findObject(bucket, key, bytesMax);
        if (found == null) {
            throw new S3Exception(S3Error.NO_SUCH_KEY, "the key '" + key + "' does not exist");
        }
        return found;
    }

    /** How often a key whose file was replaced between lookup and open (a PUT renamed over it) is looked up again. */
    private static final int REPLACED_RETRIES_MAX = 8;

    /** Opens an object's file for reading: counted as open, it stays readable until closed, whatever happens to its name. */
    PlinthFile openObject(String bucket, String key) {
        return openObject(bucket, key, null);
    }

    /**
     * As above, reading an encrypted object's plaintext with the key the request brought for it
     * ({@code brought}: its SSE-C key, null for none; an SSE-S3 object needs none).
     */
    PlinthFile openObject(String bucket, String key, ServerSideEncryption brought) {
        for (int attempt = 1; ; attempt++) {
            Attributes found = object(bucket, key).attributes();
            if (found.isDirectory()) {
                throw new S3Exception(S3Error.INVALID_REQUEST, "the key '" + key + "' is a prefix (a directory), not an object with content");
            }
            PlinthFile file = null;
            try {
                file = client.objects().openStored(found.inodeId());
                if (file.attributes().encrypted()) {
                    file.decryptWith(ServerSideEncryption.readCipher(client, client.encryptionOf(found.inodeId()), brought));
                } else {
                    ServerSideEncryption.requireNoneFor(brought);
                }
                return file;
            } catch (PlinthException e) {
                if (file != null) {
                    file.close();
                }
                if (e.code() != ErrorCode.NOT_FOUND && e.code() != ErrorCode.STALE_HANDLE || attempt == REPLACED_RETRIES_MAX) {
                    throw translate(e);
                }
            } catch (RuntimeException e) {
                if (file != null) {
                    file.close();
                }
                throw e;
            }
        }
    }

    /** How an encrypted file is encrypted, as the caller may read it. */
    dev.plinth.client.ObjectEncryption encryption(long inodeId) {
        try {
            return client.encryptionOf(inodeId);
        } catch (PlinthException e) {
            throw translate(e);
        }
    }

    /** The stored record of a file, or null (never written through S3, or unreadable). */
    ObjectRecord record(long inodeId) {
        try {
            return ObjectRecord.decode(ScopedValue.where(PlinthClient.CALLER, Credentials.ROOT)
                    .call(() -> client.getXattr(inodeId, ObjectRecord.XATTR)));
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NO_ATTRIBUTE || e.code() == ErrorCode.NOT_FOUND) {
                return null;
            }
            throw translate(e);
        }
    }


    /**
     * The ETag of a file: the stored MD5-based one while the file is as S3 wrote it, else one
     * derived from inode, size and mtime, with a '-' so that clients do not take it for an MD5.
     */
    static String etag(Attributes attributes, ObjectRecord record) {
        if (record != null && record.etag() != null && record.sizeBytes() == attributes.sizeBytes()
                && record.mtimeNanos() == attributes.mtimeNanos()) {
            return record.etag();
        }
        java.security.MessageDigest md5 = md5();
        md5.update((attributes.inodeId() + ":" + attributes.sizeBytes() + ":" + attributes.mtimeNanos()).getBytes(StandardCharsets.US_ASCII));
        return HexFormat.of().formatHex(md5.digest()) + "-1";
    }

    static java.security.MessageDigest md5() {
        try {
            return java.security.MessageDigest.getInstance("MD5");
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError("MD5 is part of every JDK", e);
        }
    }

    /**
     * Creates the directories of a path as the caller, each with {@code mode}; an existing
     * directory is fine, a file in the way is a conflict.
     */
    Attributes mkdirs(String path, int mode) {
        try {
            return client.mkdirs(path, mode);
        } catch (PlinthException e) {
            throw translate(e);
        }
    }

    /**
     * The directory an object's file goes in, made (as the caller, with the bucket's read and
     * search bits: {@link CannedAcl#directoryMode}) where missing: one lookup when it exists.
     * NoSuchBucket when the bucket is what is missing.
     */
    Attributes objectDirectory(String bucket, String key) {
        String path = objectPath(bucket, key);
        String directory = path.substring(0, path.lastIndexOf('/'));
        try {
            Attributes attributes = client.stat(directory);
            if (attributes.isDirectory()) {
                return attributes;
            }
            throw new S3Exception(S3Error.OBJECT_PATH_CONFLICT, "a part of the key '" + key + "' names an object, not a prefix");
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.NOT_FOUND && e.code() != ErrorCode.NOT_A_DIRECTORY) {
                throw translate(e);
            }
        }
        return mkdirs(directory, CannedAcl.directoryMode(bucket(bucket)));
    }

    /**
     * Refuses (AccessDenied) a caller who could not put {@code key}: one who may not add entries to
     * its directory or, where that is missing, to the nearest directory above it that exists. For
     * requests that write later (CreateMultipartUpload), so they are refused at once.
     */
    void requireWritable(String bucket, String key) {
        String bucketPath = bucketPath(bucket);
        String path = objectPath(bucket, key);
        for (String directory = path.substring(0, path.lastIndexOf('/')); ; directory = directory.substring(0, directory.lastIndexOf('/'))) {
            Attributes attributes;
            try {
                attributes = client.stat(directory);
            } catch (PlinthException e) {
                boolean missing = e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.NOT_A_DIRECTORY;
                if (missing && !directory.equals(bucketPath)) {
                    continue;
                }
                throw missing ? new S3Exception(S3Error.NO_SUCH_BUCKET, "the bucket '" + bucket + "' does not exist") : translate(e);
            }
            if (!attributes.isDirectory()) {
                throw new S3Exception(S3Error.OBJECT_PATH_CONFLICT, "a part of the key '" + key + "' names an object, not a prefix");
            }
            if (!Permissions.allowed(client.caller(), attributes.mode(), attributes.uid(), attributes.gid(), true,
                    Permissions.WRITE | Permissions.EXECUTE)) {
                throw new S3Exception(S3Error.ACCESS_DENIED, "permission denied");
            }
            return;
        }
    }

    /**
     * What an object write may replace: anything; nothing (If-None-Match: *); or only the file that
     * an If-Match was checked against, so that a write racing in between makes it fail rather
     * than be overwritten.
     */
    record Replacing(boolean nothing, long onlyInodeId) {
        static final Replacing ANYTHING = new Replacing(false, 0);
        static final Replacing NOTHING = new Replacing(true, 0);

        static Replacing only(long inodeId) {
            return new Replacing(false, inodeId);
        }
    }

    /** What a new object gets beside its record: its tags and how it is encrypted (each may be null). */
    record Extras(ObjectTags tags, dev.plinth.client.ObjectEncryption encryption) {
        static final Extras NONE = new Extras(null, null);
    }

    /** What a new object's content came to: its ETag, and the attributes its file had when closed. */
    record Written(String etag, Attributes attributes) {}

    /** Writes an object's content into an open file and returns its ETag. */
    interface ContentWriter {
        String write(PlinthFile file);
    }

    /**
     * Makes {@code name} in {@code directory} a new object atomically: writes the content into a
     * new unnamed file, then names it {@code name} with the ETag and the headers of
     * {@code template} in one change ({@link PlinthFile#publish}), so readers see the old object or
     * the new one and never a mix, if what is there is what {@code replacing} allows (else
     * PreconditionFailed). Nothing is left on failure.
     */
    Written writeObject(Attributes directory, String name, int mode, ObjectRecord template, Extras extras, Replacing replacing,
                        ContentWriter content) {
        return writeObject(directory, name, mode, () -> template, () -> extras, replacing, content);
    }

    /** As above, with the record taken once the content is written (it may hold the body's checksum). */
    Written writeObject(Attributes directory, String name, int mode, java.util.function.Supplier<ObjectRecord> template,
                        java.util.function.Supplier<Extras> extras, Replacing replacing, ContentWriter content) {
        // Unnamed until published: a failed PUT, or a gateway that dies mid-PUT, leaves nothing behind (the file goes
        // with its last close, or with the gateway's session).
        try (PlinthFile file = client.createUnnamed(directory.inodeId(), mode, null)) {
            String etag = content.write(file);
            return publish(file, directory.inodeId(), null, directory, name, template.get(), extras.get(), replacing, etag);
        } catch (PlinthException e) {
            throw writeFailure(e, replacing);
        }
    }

    /**
     * Makes {@code name} in {@code directory} the object a multipart upload assembled in place:
     * the open {@code file}, named {@code sourceName} in directory {@code sourceDirectoryId}, moved
     * there with its record in one change, as {@link #writeObject} publishes a new file.
     */
    Written publishAssembled(PlinthFile file, long sourceDirectoryId, String sourceName, Attributes directory, String name,
                             ObjectRecord template, Extras extras, Replacing replacing, String etag) {
        try {
            return publish(file, sourceDirectoryId, sourceName, directory, name, template, extras, replacing, etag);
        } catch (PlinthException e) {
            throw writeFailure(e, replacing);
        }
    }

    private Written publish(PlinthFile file, long sourceDirectoryId, String sourceName, Attributes directory, String name, ObjectRecord template,
                            Extras extras, Replacing replacing, String etag) {
        // the record names the size and mtime it describes, so a change through the mount is noticed (see etag())
        long mtimeNanos = Math.multiplyExact(System.currentTimeMillis(), 1_000_000L);
        ObjectRecord record = template.withVersion(etag, file.size(), mtimeNanos);
        Attributes attributes = file.publish(sourceDirectoryId, sourceName, directory.inodeId(), name, replacing.nothing(), mtimeNanos,
                xattrs(record, extras), replacing.onlyInodeId());
        return new Written(etag, attributes);
    }

    /**
     * The layout template a new file for {@code key} would get: its directory's, or where that does
     * not exist yet, the nearest existing one's above it in the bucket (null: the root's).
     */
    dev.plinth.common.Layout layoutFor(String bucket, String key) {
        String path = objectPath(bucket, key);
        String bucketPath = bucketPath(bucket);
        for (String directory = path.substring(0, path.lastIndexOf('/')); directory.length() >= bucketPath.length();
             directory = directory.substring(0, directory.lastIndexOf('/'))) {
            try {
                Attributes attributes = client.stat(directory);
                return attributes.isDirectory() && attributes.layout() != null ? attributes.layout().template() : null;
            } catch (PlinthException e) {
                if (e.code() != ErrorCode.NOT_FOUND && e.code() != ErrorCode.NOT_A_DIRECTORY) {
                    throw translate(e);
                }
            }
        }
        return null;
    }

    /** The extended attributes a new object is published with: its record, its tags if it has any, how it is encrypted if it is. */
    private static List<MetaMessages.Xattr> xattrs(ObjectRecord record, Extras extras) {
        List<MetaMessages.Xattr> xattrs = new java.util.ArrayList<>(3);
        xattrs.add(new MetaMessages.Xattr(ObjectRecord.XATTR, RecordCodec.encode(record)));
        if (extras.tags() != null && !extras.tags().isEmpty()) {
            xattrs.add(extras.tags().xattr());
        }
        if (extras.encryption() != null) {
            xattrs.add(new MetaMessages.Xattr(MetaMessages.SSE_XATTR, extras.encryption().encode()));
        }
        return xattrs;
    }

    /** The S3 error for a failed object write: an existing name under If-None-Match: * is a failed precondition. */
    private static S3Exception writeFailure(PlinthException e, Replacing replacing) {
        if (replacing.nothing() && e.code() == ErrorCode.ALREADY_EXISTS) {
            return new S3Exception(S3Error.PRECONDITION_FAILED, "the object exists (If-None-Match: *)");
        }
        return translate(e);
    }

    /**
     * {@link #writeObject} for a body already in memory that fits in the directory's Data-on-MDT
     * part: create, write and publish as one metadata change ({@link PlinthClient#putWhole}). If the
     * directory's layout changed meanwhile and it no longer fits, it goes the long way.
     */
    Written writeWholeObject(Attributes directory, String name, int mode, ObjectRecord template, Extras extras, Replacing replacing,
                             byte[] bytes, String etag) {
        long mtimeNanos = Math.multiplyExact(System.currentTimeMillis(), 1_000_000L);
        ObjectRecord record = template.withVersion(etag, bytes.length, mtimeNanos);
        try {
            Attributes attributes = client.objects().putWhole(directory.inodeId(), name, mode, bytes, mtimeNanos, xattrs(record, extras),
                    replacing.nothing(), replacing.onlyInodeId());
            return new Written(etag, attributes);
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.INVALID_ARGUMENT) {
                throw writeFailure(e, replacing);
            }
        }
        return writeObject(directory, name, mode, template, extras, replacing, file -> {
            file.write(0, java.nio.ByteBuffer.wrap(bytes));
            return etag;
        });
    }

    static S3Exception translate(PlinthException e) {
        return new S3Exception(S3Error.of(e.code()), e.getMessage(), e);
    }

    /** Removes the empty directories left above a deleted key, up to (not including) the bucket: a prefix lives only while it has objects. */
    void removeEmptyParents(String bucket, String key) {
        String bucketPath = bucketPath(bucket);
        String path = objectPath(bucket, key);
        int slash = path.lastIndexOf('/');
        while (slash > bucketPath.length()) {
            path = path.substring(0, slash);
            try {
                client.delete(path);
            } catch (PlinthException e) {
                return; // not empty, not ours, or gone already: stop
            }
            slash = path.lastIndexOf('/');
        }
    }

}
