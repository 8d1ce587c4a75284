package dev.plinth.gateway;

import java.util.List;

/**
 * What S3 knows of an object beyond the file's attributes, kept in the file's
 * {@value #XATTR} extended attribute: the ETag and the size and mtime it was computed for (a file
 * changed through the mount since then gets a derived ETag instead), the Content-Type and other
 * standard headers, and the user metadata (x-amz-meta-*). An object a multipart upload made also
 * names that upload (so a repeated CompleteMultipartUpload answers as the first did) and the sizes
 * of its parts (GET and HEAD with partNumber). A flexible checksum the object was written with is
 * kept with its type, and a multipart object's parts' checksums with it. Components are only added
 * at the end (RecordCodec).
 */
record ObjectRecord(int formatVersion, String etag, long sizeBytes, long mtimeNanos, String contentType, List<Header> headers,
                    List<Header> userMetadata, String uploadId, List<Long> partSizes, Checksum checksum, List<String> partChecksums,
                    Placed placed) {
    /** In user.* so that the object's owner can write it in the same change that publishes the file; readable through the mount. */
    static final String XATTR = "user.plinth.s3";
    static final int FORMAT_VERSION = 1;

    record Header(String name, String value) {}

    /**
     * A flexible checksum: the algorithm as x-amz-checksum-algorithm names it, FULL_OBJECT or
     * COMPOSITE, and the value in base64 as the x-amz-checksum-* header carries it (a composite's
     * with "-N").
     */
    record Checksum(String algorithm, String type, String value) {
        Checksums.Algorithm knownAlgorithm() {
            return Checksums.Algorithm.named(algorithm);
        }
    }

    /**
     * Where a part written in place lies in its upload's object file (see
     * {@link MultipartOperations}): the record of such a part is kept on an empty marker file.
     */
    record Placed(long offset, long sizeBytes) {}

    ObjectRecord {
        headers = headers == null ? List.of() : List.copyOf(headers);
        userMetadata = userMetadata == null ? List.of() : List.copyOf(userMetadata);
        partSizes = partSizes == null ? List.of() : List.copyOf(partSizes);
        partChecksums = partChecksums == null ? List.of() : List.copyOf(partChecksums);
    }

    ObjectRecord(int formatVersion, String etag, long sizeBytes, long mtimeNanos, String contentType, List<Header> headers,
                 List<Header> userMetadata) {
        this(formatVersion, etag, sizeBytes, mtimeNanos, contentType, headers, userMetadata, null, List.of(), null, List.of(), null);
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
        return new ObjectRecord(FORMAT_VERSION, newEtag, newSizeBytes, newMtimeNanos, contentType, headers, userMetadata, uploadId, partSizes,
                checksum, partChecksums, placed);
    }

    /** This record with the object's flexible checksum (null: none). */
    ObjectRecord withChecksum(Checksum newChecksum) {
        return new ObjectRecord(FORMAT_VERSION, etag, sizeBytes, mtimeNanos, contentType, headers, userMetadata, uploadId, partSizes,
                newChecksum, partChecksums, placed);
    }

    /**
     * The record of an object assembled by upload {@code id} from parts of these sizes and
     * checksums (empty: none), with the object's checksum made from them (null: none); with
     * {@code id} null and no parts, the record of a copy in one piece without a checksum.
     */
    ObjectRecord withParts(String id, List<Long> sizes, List<String> checksums, Checksum objectChecksum) {
        return new ObjectRecord(FORMAT_VERSION, etag, sizeBytes, mtimeNanos, contentType, headers, userMetadata, id, sizes,
                objectChecksum, checksums, null);
    }

    /** This record (a part's) for a part written in place: {@code sizeBytes} bytes at {@code offset} of the upload's object file. */
    ObjectRecord withPlaced(long offset, long partBytes) {
        return new ObjectRecord(FORMAT_VERSION, etag, sizeBytes, mtimeNanos, contentType, headers, userMetadata, uploadId, partSizes,
                checksum, partChecksums, new Placed(offset, partBytes));
    }

    /**
     * The object's checksum, if it still describes the file: written with one, and not changed
     * since (through the mount, say), as {@link S3Namespace#etag} decides for the ETag.
     */
    Checksum currentChecksum(dev.plinth.wire.messages.MetaMessages.Attributes attributes) {
        return checksum != null && sizeBytes == attributes.sizeBytes() && mtimeNanos == attributes.mtimeNanos() && etag != null ? checksum : null;
    }

    /** Whether this object was assembled from parts by a multipart upload. */
    boolean multipart() {
        return !partSizes.isEmpty();
    }
}
