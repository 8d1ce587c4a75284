package dev.plinth.gateway;

import java.util.List;

/**
 * What S3 knows of an object beyond the file's attributes, kept in the file's
 * {@value #XATTR} extended attribute: the ETag and the size and mtime it was computed for (a file
 * changed through the mount since then gets a derived ETag instead), the Content-Type and other
 * standard headers, and the user metadata (x-amz-meta-*). An object a multipart upload made also
 * names that upload (so a repeated CompleteMultipartUpload answers as the first did) and the sizes
 * of its parts (GET and HEAD with partNumber). Components are only added at the end (RecordCodec).
 */
record ObjectRecord(int formatVersion, String etag, long sizeBytes, long mtimeNanos, String contentType, List<Header> headers,
                    List<Header> userMetadata, String uploadId, List<Long> partSizes) {
    /** In user.* so that the object's owner can write it in the same change that publishes the file; readable through the mount. */
    static final String XATTR = "user.plinth.s3";
    static final int FORMAT_VERSION = 1;

    record Header(String name, String value) {}

    ObjectRecord {
        headers = headers == null ? List.of() : List.copyOf(headers);
        userMetadata = userMetadata == null ? List.of() : List.copyOf(userMetadata);
        partSizes = partSizes == null ? List.of() : List.copyOf(partSizes);
    }

    ObjectRecord(int formatVersion, String etag, long sizeBytes, long mtimeNanos, String contentType, List<Header> headers,
                 List<Header> userMetadata) {
        this(formatVersion, etag, sizeBytes, mtimeNanos, contentType, headers, userMetadata, null, List.of());
    }

    /** A stored record, or null for none or one this version cannot read. */
    static ObjectRecord decode(byte[] value) {
        if (value == null) {
            return null;
        }
        try {
            return dev.plinth.common.codec.RecordCodec.decode(ObjectRecord.class, value);
        } catch (dev.plinth.common.PlinthException e) {
            return null;
        }
    }

    ObjectRecord withVersion(String newEtag, long newSizeBytes, long newMtimeNanos) {
        return new ObjectRecord(FORMAT_VERSION, newEtag, newSizeBytes, newMtimeNanos, contentType, headers, userMetadata, uploadId, partSizes);
    }

    /** The record of an object assembled by upload {@code id} from parts of these sizes. */
    ObjectRecord withParts(String id, List<Long> sizes) {
        return new ObjectRecord(FORMAT_VERSION, etag, sizeBytes, mtimeNanos, contentType, headers, userMetadata, id, sizes);
    }

    /** Whether this object was assembled from parts by a multipart upload. */
    boolean multipart() {
        return !partSizes.isEmpty();
    }
}
