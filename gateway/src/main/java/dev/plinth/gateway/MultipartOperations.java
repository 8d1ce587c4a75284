package dev.plinth.gateway;

import dev.plinth.client.ObjectEncryption;
import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FaultPoints;
import dev.plinth.common.Layout;
import dev.plinth.common.Names;
import dev.plinth.common.Permissions;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.UUID;
import org.w3c.dom.Element;

/**
 * Multipart uploads: create, upload a part (or copy one), list parts and uploads, abort,
 * complete. Uploads live outside their bucket ({@link S3Namespace}), each its initiator's.
 *
 * <p>Parts are written in place where their offsets are known, so that completing an upload
 * moves a file instead of copying its bytes (design note 83). Every SDK cuts an upload into parts
 * of one size but the last, so the first part that arrives (of at least 5 MiB, a whole number of
 * 64 KiB checksum blocks) fixes the upload's slot size P, and part N goes to bytes [(N-1)P, (N-1)P + size)
 * of the upload's {@value #OBJECT} file, once: it claims its slot by creating
 * {@code slot-N} exclusively, and marks it finished when its writes have ended, done or failed.
 * What it wrote is then named by an empty marker {@code part-N} whose record says where it lies
 * ({@link ObjectRecord.Placed}). A part that cannot be placed (another size, a slot already
 * claimed: a re-upload, an upload begun before this scheme) is written to a file of its own,
 * {@code part-N}, as before; the last {@code part-N} published wins either way.
 *
 * <p>Completion seals the upload (creates {@value #SEALED}; a part that claims a slot checks for
 * it afterwards and gives the slot up), waits until every claimed slot is finished, so that no
 * writer can still reach the object file, then moves the file to its key. Where the chosen parts
 * are not slots 1..k of one size, the file holds more than them (a part left out, a failed
 * writer's bytes), or a claimed slot does not finish in time (its writer died), it copies the parts
 * into a new file instead: slower, equally correct.
 */
final class MultipartOperations {
    static final long PART_BYTES_MIN = 5L << 20;
    static final int PARTS_MAX = 10_000;
    /** The upload's object file, which parts written in place fill and completion moves to its key. */
    static final String OBJECT = "object";
    /** Made by completion: no slot is claimed after it (see the class comment). */
    static final String SEALED = "sealed";
    /** A symbolic link whose target is the upload's slot size in bytes: made once, atomically, by the first part placed. */
    private static final String SLOT_SIZE = "slot-size";
    /** Set on {@code slot-N} when its writer has ended, whether it placed its part or not. */
    private static final String SLOT_FINISHED_XATTR = "user.plinth.s3.slot-finished";
    /** How long completion waits for claimed slots to finish before it copies instead. */
    private static final long SLOT_FINISH_WAIT_MILLIS = 30_000;
    private static final java.util.regex.Pattern UPLOAD_ID = java.util.regex.Pattern.compile("[0-9a-f-]{36}");

    private final S3Namespace namespace;
    private final ObjectOperations objects;

    MultipartOperations(S3Namespace namespace, ObjectOperations objects) {
        this.namespace = namespace;
        this.objects = objects;
    }

    private PlinthClient client() {
        return namespace.client();
    }


    private String uploadPath(String bucket, String uploadId) {
        if (uploadId == null || !UPLOAD_ID.matcher(uploadId).matches()) {
            throw new S3Exception(S3Error.NO_SUCH_UPLOAD, "the upload id is not valid");
        }
        return namespace.uploadsPath(bucket) + "/" + uploadId;
    }

    /**
     * An upload in progress: its target key, the record and mode the object will get
     * ({@code objectMode} -1: from its directory at completion, as a PUT without an ACL), who
     * started it, the flexible checksum its parts carry and the object's type of it (both null
     * for none), the tags the object will get (x-amz-tagging's form; null for none), and how its
     * parts are encrypted (an encoded {@link ObjectEncryption}: its key, wrapped or as a salted
     * HMAC; each part gets an IV of its own; null for none).
     */
    record UploadRecord(String key, long initiatedMillis, ObjectRecord template, int ownerUid, int objectMode, String checksumAlgorithm,
                        String checksumType, String tagging, byte[] encryption) {
        static final String XATTR = "trusted.plinth.s3.upload";

        ObjectEncryption objectEncryption() {
            return encryption == null ? null : ObjectEncryption.decode(encryption);
        }

        Checksums.Algorithm algorithm() {
            return Checksums.Algorithm.named(checksumAlgorithm);
        }

        ObjectTags tags() {
            return tagging == null ? null : ObjectTags.fromXattr(tagging.getBytes(StandardCharsets.UTF_8));
        }
    }

    /** An upload in progress and the directory its parts are in. */
    private record Upload(UploadRecord record, Attributes directory) {}

    /** The upload a request's uploadId names, which must be for {@code key} in {@code bucket}. */
    private Upload uploadOf(S3Exchange exchange, String bucket, String key) {
        namespace.bucket(bucket, Permissions.EXECUTE); // a caller who cannot reach the bucket learns nothing of its uploads
        Upload upload = upload(bucket, exchange.parameter("uploadId"));
        if (!upload.record().key().equals(key)) {
            throw new S3Exception(S3Error.NO_SUCH_UPLOAD, "the upload is for another key");
        }
        return upload;
    }

    private Upload upload(String bucket, String uploadId) {
        String path = uploadPath(bucket, uploadId);
        try {
            Attributes attributes = client().stat(path);
            byte[] value = namespace.asRoot(() -> client().getXattr(attributes.inodeId(), UploadRecord.XATTR));
            return new Upload(dev.plinth.common.codec.RecordCodec.decode(UploadRecord.class, value), attributes);
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.NO_ATTRIBUTE) {
                throw new S3Exception(S3Error.NO_SUCH_UPLOAD, "the upload does not exist (completed or aborted?)");
            }
            throw S3Namespace.translate(e);
        }
    }

    /**
     * Starts an upload: refused at once (AccessDenied) for a caller who could not put the key. Its
     * parts go in a directory of the caller's own, outside the bucket (see {@link S3Namespace}),
     * so only its initiator (and root) adds parts, lists, completes or aborts it.
     */
    void createMultipartUpload(S3Exchange exchange, String bucket, String key) {
        namespace.bucket(bucket);
        namespace.objectPath(bucket, key);
        if (key.endsWith("/")) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "a key ending in '/' is a directory and holds no data");
        }
        CannedAcl acl = CannedAcl.of(exchange);
        namespace.requireWritable(bucket, key);
        String uploads = namespace.uploadsPath(bucket);
        namespace.asRoot(() -> {
            // root's and searchable: each initiator reaches its own upload's directory, no one lists them
            client().mkdirs(uploads, 0711);
            return null;
        });
        Checksums.Algorithm algorithm = ObjectOperations.checksumAlgorithm(exchange.header("x-amz-checksum-algorithm"));
        String checksumType = checksumType(algorithm, exchange.header("x-amz-checksum-type"));
        ObjectTags tags = ObjectTags.fromHeader(exchange.header("x-amz-tagging"));
        ServerSideEncryption sse = ServerSideEncryption.forWrite(exchange, namespace.channel());
        ObjectEncryption encryption = sse == null ? null : sse.newKeyed(client()).encryption();
        String uploadId = UUID.randomUUID().toString();
        UploadRecord record = new UploadRecord(key, System.currentTimeMillis(), S3Requests.recordFrom(exchange), client().caller().uid(),
                acl == null ? -1 : acl.fileMode(), algorithm == null ? null : algorithm.name(), checksumType,
                tags == null || tags.isEmpty() ? null : new String(tags.xattr().value(), StandardCharsets.UTF_8),
                encryption == null ? null : encryption.encode());
        try {
            Attributes directory = namespace.mkdirOwnedByCaller(uploads + "/" + uploadId, 0700, List.of(new dev.plinth.wire.messages.MetaMessages.Xattr(
                    UploadRecord.XATTR, dev.plinth.common.codec.RecordCodec.encode(record))));
            // the file parts are written into in place, with the layout the object would get where it is going
            client().create(directory.inodeId(), OBJECT, 0600, true, namespace.layoutFor(bucket, key));
        } catch (PlinthException e) {
            throw S3Namespace.translate(e);
        }
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("Content-Type", "application/xml");
        if (algorithm != null) {
            headers.set("x-amz-checksum-algorithm", algorithm.name());
            headers.set("x-amz-checksum-type", checksumType);
        }
        ServerSideEncryption.setResponseHeaders(headers, encryption, sse);
        exchange.respond(200, headers, Xml.document("InitiateMultipartUploadResult").element("Bucket", bucket).element("Key", key)
                .element("UploadId", uploadId).end("InitiateMultipartUploadResult").getBytes(StandardCharsets.UTF_8));
    }

    /** The type of an upload's object checksum: as x-amz-checksum-type asks, if the algorithm allows it, else the algorithm's default. */
    private static String checksumType(Checksums.Algorithm algorithm, String asked) {
        if (asked == null) {
            return algorithm == null ? null : algorithm.defaultType();
        }
        String type = asked.strip().toUpperCase(java.util.Locale.ROOT);
        if (algorithm == null) {
            throw new S3Exception(S3Error.INVALID_REQUEST, "The x-amz-checksum-type header can only be used with the x-amz-checksum-algorithm header.");
        }
        boolean allowed = switch (type) {
            case Checksums.Algorithm.FULL_OBJECT -> algorithm.fullObject();
            case Checksums.Algorithm.COMPOSITE -> algorithm.composite();
            default -> throw new S3Exception(S3Error.INVALID_REQUEST, "Value for x-amz-checksum-type header is invalid.");
        };
        if (!allowed) {
            throw new S3Exception(S3Error.INVALID_REQUEST, "The " + type + " checksum type cannot be used with the "
                    + algorithm.name().toLowerCase(java.util.Locale.ROOT) + " checksum algorithm.");
        }
        return type;
    }

    private static int partNumber(S3Exchange exchange) {
        try {
            int number = Integer.parseInt(exchange.parameter("partNumber"));
            if (number < 1 || number > PARTS_MAX) {
                throw new NumberFormatException();
            }
            return number;
        } catch (NumberFormatException e) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "partNumber must be 1.." + PARTS_MAX);
        }
    }

    private static String partName(int number) {
        return String.format("part-%05d", number);
    }

    /** What a part file records: its ETag only (the object's headers come from the upload). */
    private static final ObjectRecord PART_TEMPLATE = new ObjectRecord(ObjectRecord.FORMAT_VERSION, null, 0, 0, null, null, null);

    void uploadPart(S3Exchange exchange, InputStream body, String bucket, String key) {
        Upload upload = uploadOf(exchange, bucket, key);
        int number = partNumber(exchange);
        Checksums.Algorithm algorithm = upload.record().algorithm();
        ServerSideEncryption brought = ServerSideEncryption.forRead(exchange, namespace.channel());
        ObjectEncryption.Keyed keyed = partEncryption(upload.record(), brought);
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        ServerSideEncryption.setResponseHeaders(headers, keyed == null ? null : keyed.encryption(), brought);
        if (exchange.header("x-amz-copy-source") != null) {
            java.util.concurrent.atomic.AtomicReference<String> checksum = new java.util.concurrent.atomic.AtomicReference<>();
            S3Namespace.Written written = uploadPartCopy(exchange, upload.directory(), number, algorithm, checksum, keyed);
            Xml xml = Xml.document("CopyPartResult").element("LastModified", Http.isoDate(written.attributes().mtimeNanos() / 1_000_000))
                    .element("ETag", "\"" + written.etag() + "\"");
            if (checksum.get() != null) {
                xml.element(algorithm.element(), checksum.get());
            }
            headers.set("Content-Type", "application/xml");
            exchange.respond(200, headers, xml.end("CopyPartResult").getBytes(StandardCharsets.UTF_8));
            return;
        }
        long length = S3Requests.contentLength(exchange);
        if (length < 0) {
            throw new S3Exception(S3Error.MISSING_CONTENT_LENGTH, "UploadPart needs a Content-Length");
        }
        CheckedBody checked = CheckedBody.of(exchange, body, algorithm);
        dev.plinth.client.ObjectCipher encryptor = keyed == null ? null : keyed.cipher();
        S3Namespace.Extras extras = new S3Namespace.Extras(null, keyed == null ? null : keyed.encryption());
        Slot slot = claimSlot(upload.directory(), number, length);
        String etag;
        if (slot != null) {
            try {
                String md5;
                try (PlinthFile file = client().open(slot.objectInodeId(), true)) {
                    md5 = HexFormat.of().formatHex(ObjectIo.writeBody(checked, file, slot.offset(), length, length, encryptor).md5());
                }
                // the marker: empty, its record saying where the part lies; published as a part file is, so the last part N wins
                etag = namespace.writeObject(upload.directory(), partName(number), 0600,
                        () -> PART_TEMPLATE.withChecksum(checked.objectChecksum()).withPlaced(slot.offset(), length), () -> extras,
                        S3Namespace.Replacing.ANYTHING, file -> md5).etag();
            } catch (PlinthException e) {
                throw S3Namespace.translate(e);
            } finally {
                finishSlot(slot);
            }
        } else {
            etag = namespace.writeObject(upload.directory(), partName(number), 0600, () -> PART_TEMPLATE.withChecksum(checked.objectChecksum()),
                    () -> extras, S3Namespace.Replacing.ANYTHING,
                    file -> HexFormat.of().formatHex(ObjectIo.writeBody(checked, file, length, Layout.FILE_SIZE_MAX, encryptor).md5())).etag();
        }
        headers.set("ETag", "\"" + etag + "\"");
        if (checked.algorithm() != null) {
            headers.set(checked.algorithm().header(), checked.checksum());
        }
        exchange.respond(200, headers, null);
    }

    /** A slot of an upload's object file claimed for part N: the claim file, the object file, and where the part goes. */
    private record Slot(long claimInodeId, long objectInodeId, long offset) {}

    /**
     * Claims the slot of part {@code number} ({@code length} bytes) in the upload's object file, or
     * answers null when the part is to be written to a file of its own: the upload has no object
     * file or is being completed, its slot size is not known or is another, or the slot was claimed
     * before. See the class comment.
     */
    private Slot claimSlot(Attributes directory, int number, long length) {
        try {
            Attributes object = client().lookup(directory.inodeId(), OBJECT);
            long slotBytes = slotBytes(directory, length);
            long offset = (number - 1) * slotBytes;
            if (slotBytes <= 0 || length == 0 || length > slotBytes || offset + slotBytes > Layout.FILE_SIZE_MAX) {
                return null;
            }
            long claim = client().create(directory.inodeId(), slotName(number), 0600, true, null).attributes().inodeId();
            Slot slot = new Slot(claim, object.inodeId(), offset);
            if (exists(directory, SEALED)) {
                finishSlot(slot); // completion began before the claim: its listing may not show it, so do not write
                return null;
            }
            return slot;
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.ALREADY_EXISTS) {
                return null;
            }
            throw S3Namespace.translate(e);
        }
    }

    /**
     * The upload's slot size: fixed by the first part placed, if its size is at least the smallest
     * part and a whole number of checksum blocks (so that no two parts' writes share a block; the
     * targets would serialize them, but every SDK's part size is whole MiB anyway); 0 while unknown.
     */
    private long slotBytes(Attributes directory, long length) {
        long fixed = slotSize(directory);
        if (fixed > 0) {
            return fixed;
        }
        if (length < PART_BYTES_MIN || length % dev.plinth.common.Crc32cBlocks.BLOCK_BYTES != 0) {
            return 0;
        }
        try {
            client().symlink(directory.inodeId(), SLOT_SIZE, Long.toString(length));
            return length;
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.ALREADY_EXISTS) {
                return slotBytes(directory, length); // another part fixed it first
            }
            throw e;
        }
    }

    private boolean exists(Attributes directory, String name) {
        try {
            client().lookup(directory.inodeId(), name);
            return true;
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                return false;
            }
            throw e;
        }
    }

    /** Marks a slot's writer ended (its handle on the object file closed). Failing to, completion later copies instead. */
    private void finishSlot(Slot slot) {
        try {
            client().setXattr(slot.claimInodeId(), SLOT_FINISHED_XATTR, new byte[] {1}, 0);
        } catch (PlinthException e) {
            // the slot stays unfinished: completion waits for it, then copies the parts instead of moving the file
        }
    }

    private static String slotName(int number) {
        return String.format("slot-%05d", number);
    }

    /**
     * How a new part of an upload is encrypted (null: the upload is not): the upload's key (an
     * SSE-C upload's must come with each part) with an IV of the part's own.
     */
    private ObjectEncryption.Keyed partEncryption(UploadRecord upload, ServerSideEncryption brought) {
        ObjectEncryption encryption = upload.objectEncryption();
        if (encryption == null) {
            ServerSideEncryption.requireNoneFor(brought);
            return null;
        }
        return new ObjectEncryption.Keyed(encryption, ServerSideEncryption.dataKey(client(), encryption, brought)).withFreshIv();
    }

    /**
     * Copies a part from an object (decrypted with the key the request brings for it, if any);
     * with the upload's checksum algorithm, the part's checksum is computed over the copied bytes;
     * with the upload's encryption, the part is encrypted as it is written.
     */
    private S3Namespace.Written uploadPartCopy(S3Exchange exchange, Attributes directory, int number, Checksums.Algorithm algorithm,
                                               java.util.concurrent.atomic.AtomicReference<String> checksum, ObjectEncryption.Keyed keyed) {
        ObjectOperations.CopySource source = ObjectOperations.CopySource.parse(exchange.header("x-amz-copy-source"));
        try (PlinthFile from = namespace.openObject(source.bucket(), source.key(), ServerSideEncryption.forCopySource(exchange, namespace.channel()))) {
            long size = from.attributes().sizeBytes();
            long start = 0;
            long end = size;
            String range = exchange.header("x-amz-copy-source-range");
            if (range != null) {
                long[] parsed = Conditions.copySourceRange(range, size);
                start = parsed[0];
                end = parsed[1];
            }
            long first = start;
            long last = end;
            Checksums.Running running = algorithm == null ? null : algorithm.running();
            S3Namespace.Extras extras = new S3Namespace.Extras(null, keyed == null ? null : keyed.encryption());
            return namespace.writeObject(directory, partName(number), 0600,
                    () -> checksum.get() == null ? PART_TEMPLATE
                            : PART_TEMPLATE.withChecksum(new ObjectRecord.Checksum(algorithm.name(), Checksums.Algorithm.FULL_OBJECT, checksum.get())),
                    () -> extras, S3Namespace.Replacing.ANYTHING, target -> {
                        String etag = ObjectOperations.copyRange(from, first, last, target, running, keyed == null ? null : keyed.cipher());
                        if (running != null) {
                            checksum.set(running.base64());
                        }
                        return etag;
                    });
        } catch (PlinthException e) {
            throw S3Namespace.translate(e);
        }
    }

    /**
     * A stored part: number, the attributes of its file (a marker's, for a part written in place),
     * its size, ETag, the checksum it was uploaded with (null: none), and where it lies in the
     * upload's object file (null: in its own file).
     */
    private record Part(int number, Attributes attributes, long sizeBytes, String etag, ObjectRecord.Checksum checksum,
                        ObjectRecord.Placed placed) {}

    private List<Part> parts(String directory) {
        List<Part> parts = new ArrayList<>();
        for (PlinthClient.Listed listed : client().listWithAttributes(directory)) {
            String name = listed.entry().name();
            if (name.startsWith("part-") && listed.attributes().type() == dev.plinth.common.FileType.FILE) {
                Attributes attributes = listed.attributes();
                ObjectRecord record = namespace.record(attributes.inodeId());
                int number = Integer.parseInt(name.substring(5));
                if (record != null && record.placed() != null) {
                    parts.add(new Part(number, attributes, record.placed().sizeBytes(), record.etag(), record.checksum(), record.placed()));
                } else {
                    parts.add(new Part(number, attributes, attributes.sizeBytes(), S3Namespace.etag(attributes, record),
                            record == null ? null : record.currentChecksum(attributes), null));
                }
            }
        }
        return parts;
    }

    void listParts(S3Exchange exchange, String bucket, String key) {
        String uploadId = exchange.parameter("uploadId");
        UploadRecord upload = uploadOf(exchange, bucket, key).record();
        int marker = exchange.parameter("part-number-marker") == null ? 0 : S3Requests.boundedCount(exchange.parameter("part-number-marker"), "part-number-marker");
        int maxParts = S3Requests.boundedCount(exchange.parameter("max-parts"), "max-parts");
        List<Part> parts = parts(uploadPath(bucket, uploadId)).stream().filter(p -> p.number() > marker).toList();
        boolean truncated = parts.size() > maxParts;
        parts = parts.subList(0, Math.min(parts.size(), maxParts));
        Xml xml = Xml.document("ListPartsResult").element("Bucket", bucket).element("Key", key).element("UploadId", uploadId)
                .element("PartNumberMarker", marker).element("MaxParts", maxParts).element("IsTruncated", truncated);
        if (truncated) {
            xml.element("NextPartNumberMarker", parts.getLast().number());
        }
        if (upload.algorithm() != null) {
            xml.element("ChecksumAlgorithm", upload.algorithm().name()).element("ChecksumType", upload.checksumType());
        }
        for (Part part : parts) {
            xml.open("Part").element("PartNumber", part.number()).element("LastModified", Http.isoDate(part.attributes().mtimeNanos() / 1_000_000))
                    .element("ETag", "\"" + part.etag() + "\"").element("Size", part.sizeBytes());
            Checksums.Algorithm algorithm = part.checksum() == null ? null : part.checksum().knownAlgorithm();
            if (algorithm != null) {
                xml.element(algorithm.element(), part.checksum().value());
            }
            xml.close("Part");
        }
        exchange.respondXml(200, xml.end("ListPartsResult"));
    }

    /** An upload in progress as ListMultipartUploads shows it. */
    private record ListedUpload(String key, String uploadId, long initiatedMillis, int ownerUid) {}

    /** Uploads in key order, then upload id; paged by key-marker/upload-id-marker and max-uploads (at most 1000). */
    void listMultipartUploads(S3Exchange exchange, String bucket) {
        Attributes bucketAttributes = namespace.bucket(bucket);
        if (!dev.plinth.common.Permissions.allowed(client().caller(), bucketAttributes.mode(), bucketAttributes.uid(), bucketAttributes.gid(),
                true, dev.plinth.common.Permissions.READ)) {
            throw new S3Exception(S3Error.ACCESS_DENIED, "listing a bucket's uploads needs read permission on the bucket");
        }
        String prefix = S3Requests.orEmpty(exchange.parameter("prefix"));
        String keyMarker = S3Requests.orEmpty(exchange.parameter("key-marker"));
        String uploadIdMarker = S3Requests.orEmpty(exchange.parameter("upload-id-marker"));
        int maxUploads = S3Requests.boundedCount(exchange.parameter("max-uploads"), "max-uploads");
        List<DirEntry> entries;
        try {
            entries = namespace.asRoot(() -> client().list(namespace.uploadsPath(bucket)));
        } catch (PlinthException e) {
            entries = List.of();
        }
        List<ListedUpload> uploads = new ArrayList<>();
        for (DirEntry entry : entries) {
            try {
                UploadRecord record = upload(bucket, entry.name()).record();
                int order = ObjectListing.compareKeys(record.key(), keyMarker);
                boolean afterMarker = keyMarker.isEmpty() || order > 0 || (order == 0 && !uploadIdMarker.isEmpty()
                        && entry.name().compareTo(uploadIdMarker) > 0);
                if (record.key().startsWith(prefix) && afterMarker) {
                    uploads.add(new ListedUpload(record.key(), entry.name(), record.initiatedMillis(), record.ownerUid()));
                }
            } catch (S3Exception e) {
                // completed or aborted meanwhile
            }
        }
        uploads.sort((x, y) -> x.key().equals(y.key()) ? x.uploadId().compareTo(y.uploadId()) : ObjectListing.compareKeys(x.key(), y.key()));
        boolean truncated = uploads.size() > maxUploads;
        List<ListedUpload> page = uploads.subList(0, Math.min(uploads.size(), maxUploads));
        Xml xml = Xml.document("ListMultipartUploadsResult").element("Bucket", bucket).element("KeyMarker", keyMarker)
                .element("UploadIdMarker", uploadIdMarker).element("Prefix", prefix).element("MaxUploads", maxUploads)
                .element("IsTruncated", truncated);
        if (truncated && !page.isEmpty()) {
            xml.element("NextKeyMarker", page.getLast().key()).element("NextUploadIdMarker", page.getLast().uploadId());
        }
        for (ListedUpload upload : page) {
            String owner = String.valueOf(upload.ownerUid());
            xml.open("Upload").element("Key", upload.key()).element("UploadId", upload.uploadId()).open("Initiator").element("ID", owner)
                    .element("DisplayName", owner).close("Initiator").open("Owner").element("ID", owner).element("DisplayName", owner)
                    .close("Owner").element("StorageClass", "STANDARD").element("Initiated", Http.isoDate(upload.initiatedMillis()))
                    .close("Upload");
        }
        exchange.respondXml(200, xml.end("ListMultipartUploadsResult"));
    }

    private static String completeResult(String bucket, String key, String etag, ObjectRecord.Checksum checksum) {
        Xml xml = Xml.document("CompleteMultipartUploadResult").element("Location", "/" + bucket + "/" + key).element("Bucket", bucket)
                .element("Key", key).element("ETag", "\"" + etag + "\"");
        if (checksum != null && checksum.knownAlgorithm() != null) {
            xml.element(checksum.knownAlgorithm().element(), checksum.value()).element("ChecksumType", checksum.type());
        }
        return xml.end("CompleteMultipartUploadResult");
    }

    void abortMultipartUpload(S3Exchange exchange, String bucket, String key) {
        Upload upload = uploadOf(exchange, bucket, key);
        removeUpload(upload, uploadPath(bucket, exchange.parameter("uploadId")));
        exchange.respond(204, null, null);
    }

    /** Removes an upload's parts (as the caller, who must be its initiator or root), then its directory (as root: it is in root's). */
    private void removeUpload(Upload upload, String directory) {
        if (!client().caller().isRoot() && upload.directory().uid() != client().caller().uid()) {
            throw new S3Exception(S3Error.ACCESS_DENIED, "only the upload's initiator ends it");
        }
        try {
            for (DirEntry entry : client().list(directory)) {
                client().delete(directory + "/" + entry.name());
            }
            namespace.asRoot(() -> {
                client().delete(directory);
                return null;
            });
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.NOT_FOUND) {
                throw S3Namespace.translate(e);
            }
        }
    }

    /**
     * The object checksum an upload made with a checksum algorithm gets from its chosen parts
     * (null for an upload without one): of the parts' checksums (COMPOSITE, "-N"), or their CRCs
     * combined into the whole object's (FULL_OBJECT), which an x-amz-checksum-* header of the
     * request, if any, must match.
     */
    private static ObjectRecord.Checksum objectChecksum(UploadRecord upload, List<Part> chosen, S3Exchange exchange) {
        Checksums.Algorithm algorithm = upload.algorithm();
        if (algorithm == null) {
            return null;
        }
        for (Part part : chosen) {
            if (part.checksum() == null || part.checksum().knownAlgorithm() != algorithm) {
                throw new S3Exception(S3Error.INVALID_PART, "part " + part.number() + " has no " + algorithm.name() + " checksum");
            }
        }
        java.util.Base64.Decoder base64 = java.util.Base64.getDecoder();
        if (Checksums.Algorithm.COMPOSITE.equals(upload.checksumType())) {
            Checksums.Running ofChecksums = algorithm.running();
            for (Part part : chosen) {
                byte[] value = base64.decode(part.checksum().value());
                ofChecksums.update(value, 0, value.length);
            }
            return new ObjectRecord.Checksum(algorithm.name(), Checksums.Algorithm.COMPOSITE, ofChecksums.base64() + "-" + chosen.size());
        }
        byte[] whole = base64.decode(chosen.getFirst().checksum().value());
        for (Part part : chosen.subList(1, chosen.size())) {
            whole = algorithm.combine(whole, base64.decode(part.checksum().value()), part.sizeBytes());
        }
        String value = java.util.Base64.getEncoder().encodeToString(whole);
        String given = exchange.header(algorithm.header());
        if (given != null && !given.strip().equals(value)) {
            throw new S3Exception(S3Error.BAD_DIGEST, "The " + algorithm.header() + " you specified did not match the calculated checksum.");
        }
        return new ObjectRecord.Checksum(algorithm.name(), Checksums.Algorithm.FULL_OBJECT, value);
    }

    /**
     * How the object an encrypted upload makes is encrypted (null: it is not): the upload's key,
     * and one segment per chosen part, where its bytes start, with the part's IV.
     */
    private ObjectEncryption objectEncryption(UploadRecord upload, List<Part> chosen) {
        ObjectEncryption encryption = upload.objectEncryption();
        if (encryption == null) {
            return null;
        }
        List<ObjectEncryption.Segment> segments = new ArrayList<>();
        long offset = 0;
        for (Part part : chosen) {
            if (!part.attributes().encrypted()) {
                throw new S3Exception(S3Error.INVALID_PART, "part " + part.number() + " is not encrypted as its upload is");
            }
            segments.add(new ObjectEncryption.Segment(offset, namespace.encryption(part.attributes().inodeId()).segments().getFirst().iv()));
            offset += part.sizeBytes();
        }
        return encryption.withSegments(segments);
    }

    /**
     * Checks the part list, then makes the object: the upload's file moved to the key where the
     * parts lie in it in order ({@link #moveAssembled}), else the parts copied into a new file.
     * S3 answers 200 at once and keeps the connection alive with spaces while it works, so clients
     * do not time out on large objects; an error after that travels in the body, as S3's does.
     */
    void completeMultipartUpload(S3Exchange exchange, InputStream body, String bucket, String key) {
        Upload upload;
        try {
            upload = uploadOf(exchange, bucket, key);
        } catch (S3Exception e) {
            // completed already: S3 answers a repeated CompleteMultipartUpload as it answered the first
            S3Namespace.Found completed = e.error() == S3Error.NO_SUCH_UPLOAD ? namespace.findObject(bucket, key) : null;
            if (completed == null || completed.record() == null || !exchange.parameter("uploadId").equals(completed.record().uploadId())) {
                throw e;
            }
            S3Requests.requireReadable(client(), completed.attributes());
            exchange.respondXml(200, completeResult(bucket, key, S3Namespace.etag(completed.attributes(), completed.record()),
                    completed.record().currentChecksum(completed.attributes())));
            return;
        }
        Element root = Xml.parse(body);
        if (!"CompleteMultipartUpload".equals(root.getLocalName())) {
            throw new S3Exception(S3Error.MALFORMED_XML, "the body must be a <CompleteMultipartUpload> document");
        }
        String directory = uploadPath(bucket, exchange.parameter("uploadId"));
        java.util.Map<Integer, Part> stored = new java.util.HashMap<>();
        for (Part part : parts(directory)) {
            stored.put(part.number(), part);
        }
        List<Part> chosen = new ArrayList<>();
        int previous = 0;
        for (Element element : Xml.children(root, "Part")) {
            int number;
            try {
                number = Integer.parseInt(Xml.childText(element, "PartNumber"));
            } catch (NumberFormatException | NullPointerException e) {
                throw new S3Exception(S3Error.MALFORMED_XML, "a <Part> without a valid <PartNumber>");
            }
            if (number <= previous) {
                throw new S3Exception(S3Error.INVALID_PART_ORDER, "the list of parts was not in ascending order");
            }
            previous = number;
            String etag = Xml.childText(element, "ETag");
            Part part = stored.get(number);
            if (part == null || etag == null || !etag.replace("\"", "").equals(part.etag())) {
                throw new S3Exception(S3Error.INVALID_PART, "part " + number + " was not uploaded or its ETag does not match");
            }
            for (Checksums.Algorithm algorithm : Checksums.Algorithm.values()) {
                String given = Xml.childText(element, algorithm.element());
                if (given != null && (part.checksum() == null || part.checksum().knownAlgorithm() != algorithm || !given.equals(part.checksum().value()))) {
                    throw new S3Exception(S3Error.INVALID_PART, "part " + number + "'s " + algorithm.element() + " does not match the part uploaded");
                }
            }
            chosen.add(part);
        }
        if (chosen.isEmpty()) {
            throw new S3Exception(S3Error.MALFORMED_XML, "no parts given");
        }
        for (int i = 0; i < chosen.size() - 1; i++) {
            if (chosen.get(i).sizeBytes() < PART_BYTES_MIN) {
                throw new S3Exception(S3Error.ENTITY_TOO_SMALL, "part " + chosen.get(i).number() + " is smaller than 5 MiB and not the last");
            }
        }
        ObjectRecord.Checksum checksum = objectChecksum(upload.record(), chosen, exchange);
        ObjectEncryption encryption = objectEncryption(upload.record(), chosen);
        String path = namespace.objectPath(bucket, key);
        namespace.requireWritable(bucket, key);
        S3Namespace.Replacing replacing = objects.writeCondition(exchange, bucket, key);
        Attributes target = namespace.objectDirectory(bucket, key);
        int mode = upload.record().objectMode() >= 0 ? upload.record().objectMode() : CannedAcl.fileMode(null, target);
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("Content-Type", "application/xml");
        ServerSideEncryption.setResponseHeaders(headers, encryption);
        exchange.startStream(200, headers, -1);
        exchange.streamChunk(io.netty.buffer.Unpooled.copiedBuffer(Xml.HEADER, StandardCharsets.UTF_8));
        String result;
        try {
            ObjectRecord template = upload.record().template().withParts(exchange.parameter("uploadId"),
                    chosen.stream().map(Part::sizeBytes).toList(),
                    checksum == null ? List.of() : chosen.stream().map(part -> part.checksum().value()).toList(), checksum);
            S3Namespace.Extras extras = new S3Namespace.Extras(upload.record().tags(), encryption);
            String etag = multipartEtag(chosen);
            String name = Names.lastName(path);
            S3Namespace.Written written = moveAssembled(upload.directory(), directory, chosen, target, name, mode, template, extras, replacing,
                    etag, exchange);
            if (written == null) {
                written = namespace.writeObject(target, name, mode, template, extras, replacing, file -> {
                    copyParts(upload.directory(), chosen, file, exchange);
                    return etag;
                });
            }
            removeUpload(upload, directory);
            result = completeResult(bucket, key, written.etag(), checksum).substring(Xml.HEADER.length());
        } catch (S3Exception e) {
            result = Xml.error(e.error().code(), e.getMessage(), exchange.path(), exchange.requestId()).substring(Xml.HEADER.length());
        } catch (PlinthException e) {
            S3Exception translated = S3Namespace.translate(e);
            result = Xml.error(translated.error().code(), e.getMessage(), exchange.path(), exchange.requestId()).substring(Xml.HEADER.length());
        }
        exchange.streamChunk(io.netty.buffer.Unpooled.copiedBuffer(result, StandardCharsets.UTF_8));
        exchange.endStream();
    }

    /** A multipart object's ETag, as S3 makes it: the MD5 of its parts' MD5s, then "-" and how many parts. */
    private static String multipartEtag(List<Part> chosen) {
        java.security.MessageDigest etags = S3Namespace.md5();
        for (Part part : chosen) {
            etags.update(HexFormat.of().parseHex(part.etag()));
        }
        return HexFormat.of().formatHex(etags.digest()) + "-" + chosen.size();
    }

    /**
     * Completes an upload without copying its placed parts (see the class comment): when the
     * chosen parts are 1..k, each of the slot size but the last, seals the upload, waits for every
     * claimed slot to finish, copies into their slots the parts that have files of their own (the
     * last part often does: smaller than any slot size, it may arrive before one is fixed), and
     * moves the file to {@code name} in {@code target}. Null where it cannot, for the caller to copy
     * all the parts into a new file instead.
     */
    private S3Namespace.Written moveAssembled(Attributes directory, String directoryPath, List<Part> chosen, Attributes target, String name,
                                              int mode, ObjectRecord template, S3Namespace.Extras extras, S3Namespace.Replacing replacing,
                                              String etag, S3Exchange exchange) {
        long slotBytes = slotSize(directory);
        long total = 0;
        boolean anyPlaced = false;
        for (int i = 0; i < chosen.size(); i++) {
            Part part = chosen.get(i);
            boolean last = i == chosen.size() - 1;
            if (slotBytes <= 0 || part.number() != i + 1 || (last ? part.sizeBytes() > slotBytes : part.sizeBytes() != slotBytes)) {
                return null;
            }
            anyPlaced |= part.placed() != null;
            total += part.sizeBytes();
        }
        if (!anyPlaced) {
            return null;
        }
        Attributes object = client().lookup(directory.inodeId(), OBJECT); // there: a part was placed in it
        try {
            client().create(directory.inodeId(), SEALED, 0600, true, null);
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.ALREADY_EXISTS) {
                throw e;
            }
            // sealed already, by an earlier completion that failed: no slot was claimed after it either
        }
        if (!slotsFinished(directoryPath)) {
            return null;
        }
        // sealed, and every slot's writer has ended: nothing but this handle writes the file now
        try (PlinthFile file = client().open(object.inodeId(), true)) {
            if (file.size() > total) {
                // bytes past the chosen parts: a part uploaded and left out, or a writer that failed. Cutting them off
                // would lose them for a later completion if this one fails, so copy instead
                return null;
            }
            KeepAlive keepAlive = new KeepAlive(exchange);
            for (Part part : chosen) {
                if (part.placed() == null) {
                    // its slot holds nothing any part-N names now (never written, a failed writer's, or a replaced part's)
                    try (PlinthFile from = client().objects().openStored(part.attributes().inodeId())) {
                        ObjectIo.copy(from, 0, part.sizeBytes(), file, (part.number() - 1) * slotBytes, null, null);
                    }
                    keepAlive.tick();
                }
            }
            if (file.size() != total) {
                return null; // the last slot holds more than the last part: a failed writer's bytes
            }
            client().setAttr(object.inodeId(), dev.plinth.wire.messages.MetaMessages.SET_MODE, mode, 0, 0, 0, 0, 0);
            return namespace.publishAssembled(file, directory.inodeId(), OBJECT, target, name, template, extras, replacing, etag);
        }
    }

    /** The upload's slot size, or 0 where none was fixed. */
    private long slotSize(Attributes directory) {
        try {
            return Long.parseLong(client().readLink(client().lookup(directory.inodeId(), SLOT_SIZE).inodeId()));
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND) {
                return 0;
            }
            throw e;
        }
    }

    /**
     * Keeps a completion's connection alive: S3 answers 200 at once and sends spaces while it
     * works, so clients do not time out on large objects.
     */
    private static final class KeepAlive {
        private final S3Exchange exchange;
        private long lastNanos = System.nanoTime();

        KeepAlive(S3Exchange exchange) {
            this.exchange = exchange;
        }

        void tick() {
            if (System.nanoTime() - lastNanos > 2_000_000_000L) {
                exchange.streamChunk(io.netty.buffer.Unpooled.copiedBuffer(" ", StandardCharsets.US_ASCII));
                lastNanos = System.nanoTime();
            }
        }
    }

    /**
     * Waits, for at most {@link #SLOT_FINISH_WAIT_MILLIS}, until the writer of every claimed slot
     * has ended; false if one has not (it may have died; it may still write).
     */
    private boolean slotsFinished(String directoryPath) {
        List<Long> waiting = new ArrayList<>();
        for (DirEntry entry : client().list(directoryPath)) {
            if (entry.name().matches("slot-[0-9]{5}")) {
                waiting.add(entry.inodeId());
            }
        }
        long waitMillis = FaultPoints.value(FaultPoints.S3_SLOT_FINISH_WAIT_MILLIS, SLOT_FINISH_WAIT_MILLIS);
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(waitMillis);
        while (true) {
            waiting.removeIf(this::slotFinished);
            if (waiting.isEmpty()) {
                return true;
            }
            if (System.nanoTime() - deadline > 0) {
                return false;
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
    }

    private boolean slotFinished(long claimInodeId) {
        try {
            client().getXattr(claimInodeId, SLOT_FINISHED_XATTR);
            return true;
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NO_ATTRIBUTE) {
                return false;
            }
            throw e;
        }
    }

    /**
     * Writes the chosen parts one after another into {@code file}, each as stored (an encrypted
     * part's bytes as they are: the object's segments carry each part's IV), keeping the client's
     * connection alive while it works.
     */
    private void copyParts(Attributes directory, List<Part> chosen, PlinthFile file, S3Exchange exchange) {
        long offset = 0;
        KeepAlive keepAlive = new KeepAlive(exchange);
        PlinthFile object = null;
        try {
            for (Part part : chosen) {
                if (part.placed() == null) {
                    try (PlinthFile from = client().objects().openStored(part.attributes().inodeId())) {
                        ObjectIo.copy(from, 0, part.sizeBytes(), file, offset, null, null);
                    }
                } else {
                    if (object == null) {
                        object = client().objects().openStored(client().lookup(directory.inodeId(), OBJECT).inodeId());
                    }
                    ObjectIo.copy(object, part.placed().offset(), part.sizeBytes(), file, offset, null, null);
                }
                offset += part.sizeBytes();
                keepAlive.tick();
            }
        } finally {
            if (object != null) {
                object.close();
            }
        }
    }
}
