package dev.plinth.gateway;

import dev.plinth.client.ObjectEncryption;
import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.Names;
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
 * complete (concatenating the parts into one new object). Uploads live outside their bucket
 * ({@link S3Namespace}), each its initiator's.
 */
final class MultipartOperations {
    static final long PART_BYTES_MIN = 5L << 20;
    static final int PARTS_MAX = 10_000;
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
        namespace.bucket(bucket);
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
            namespace.mkdirOwnedByCaller(uploads + "/" + uploadId, 0700, List.of(new dev.plinth.wire.messages.MetaMessages.Xattr(
                    UploadRecord.XATTR, dev.plinth.common.codec.RecordCodec.encode(record))));
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
        String etag = namespace.writeObject(upload.directory(), partName(number), 0600, () -> PART_TEMPLATE.withChecksum(checked.objectChecksum()),
                () -> extras, S3Namespace.Replacing.ANYTHING,
                file -> HexFormat.of().formatHex(ObjectIo.writeBody(checked, file, length, Layout.FILE_SIZE_MAX, encryptor).md5())).etag();
        headers.set("ETag", "\"" + etag + "\"");
        if (checked.algorithm() != null) {
            headers.set(checked.algorithm().header(), checked.checksum());
        }
        exchange.respond(200, headers, null);
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

    /** A stored part: number, attributes, ETag, and the checksum it was uploaded with (null: none). */
    private record Part(int number, Attributes attributes, String etag, ObjectRecord.Checksum checksum) {}

    private List<Part> parts(String directory) {
        List<Part> parts = new ArrayList<>();
        for (PlinthClient.Listed listed : client().listWithAttributes(directory)) {
            String name = listed.entry().name();
            if (name.startsWith("part-") && listed.attributes().type() == dev.plinth.common.FileType.FILE) {
                Attributes attributes = listed.attributes();
                ObjectRecord record = namespace.record(attributes.inodeId());
                parts.add(new Part(Integer.parseInt(name.substring(5)), attributes, S3Namespace.etag(attributes, record),
                        record == null ? null : record.currentChecksum(attributes)));
            }
        }
        return parts;
    }

    void listParts(S3Exchange exchange, String bucket, String key) {
        namespace.bucket(bucket);
        String uploadId = exchange.parameter("uploadId");
        UploadRecord upload = upload(bucket, uploadId).record();
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
                    .element("ETag", "\"" + part.etag() + "\"").element("Size", part.attributes().sizeBytes());
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

    void abortMultipartUpload(S3Exchange exchange, String bucket) {
        namespace.bucket(bucket);
        String uploadId = exchange.parameter("uploadId");
        removeUpload(upload(bucket, uploadId), uploadPath(bucket, uploadId));
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
            whole = algorithm.combine(whole, base64.decode(part.checksum().value()), part.attributes().sizeBytes());
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
            offset += part.attributes().sizeBytes();
        }
        return encryption.withSegments(segments);
    }

    /**
     * Checks the part list, then concatenates the parts into the object (a copy through the
     * gateway: chunks belong to their file). S3 answers 200 at once and keeps the connection alive
     * with spaces while it works, so clients do not time out on large objects; an error after that
     * travels in the body, as S3's does.
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
            if (chosen.get(i).attributes().sizeBytes() < PART_BYTES_MIN) {
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
                    chosen.stream().map(part -> part.attributes().sizeBytes()).toList(),
                    checksum == null ? List.of() : chosen.stream().map(part -> part.checksum().value()).toList(), checksum);
            S3Namespace.Written written = namespace.writeObject(target, Names.lastName(path), mode, template,
                    new S3Namespace.Extras(upload.record().tags(), encryption), replacing, file -> {
                java.security.MessageDigest etags = S3Namespace.md5();
                long offset = 0;
                long lastKeepAlive = System.nanoTime();
                for (Part part : chosen) {
                    etags.update(HexFormat.of().parseHex(part.etag()));
                    // an encrypted part's bytes are copied as stored: the object's segments carry each part's IV
                    try (PlinthFile from = client().objects().openStored(part.attributes().inodeId())) {
                        ObjectIo.copy(from, 0, part.attributes().sizeBytes(), file, offset, null, null);
                    }
                    offset += part.attributes().sizeBytes();
                    if (System.nanoTime() - lastKeepAlive > 2_000_000_000L) {
                        exchange.streamChunk(io.netty.buffer.Unpooled.copiedBuffer(" ", StandardCharsets.US_ASCII));
                        lastKeepAlive = System.nanoTime();
                    }
                }
                return HexFormat.of().formatHex(etags.digest()) + "-" + chosen.size();
            });
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
}
