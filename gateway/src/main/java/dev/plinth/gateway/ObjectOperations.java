package dev.plinth.gateway;

import dev.plinth.client.ObjectEncryption;
import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.Names;
import dev.plinth.common.NonBlocking;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import java.io.InputStream;
import java.util.HexFormat;
import java.util.List;
import org.w3c.dom.Element;

/**
 * Objects: put (atomically, as one publish), get and head (small ones without an open, large
 * ones read without one), delete, batch delete and copy; conditional writes. Every method runs
 * as the request's caller; see {@link S3Namespace} for how keys map to paths.
 */
final class ObjectOperations {
    private final S3Namespace namespace;
    private final TaggingOperations tagging;

    ObjectOperations(S3Namespace namespace, TaggingOperations tagging) {
        this.namespace = namespace;
        this.tagging = tagging;
    }

    private PlinthClient client() {
        return namespace.client();
    }


    void putObject(S3Exchange exchange, InputStream body, String bucket, String key) {
        long length = S3Requests.contentLength(exchange);
        if (length < 0 && exchange.header("Transfer-Encoding") == null) {
            throw new S3Exception(S3Error.MISSING_CONTENT_LENGTH, "PutObject needs a Content-Length");
        }
        String path = namespace.objectPath(bucket, key);
        if (key.endsWith("/")) {
            // a "folder": a directory; only an empty body makes sense
            byte[] extra;
            try {
                extra = body.readNBytes(1);
            } catch (java.io.IOException e) {
                throw new S3Exception(S3Error.INCOMPLETE_BODY, e.getMessage());
            }
            if (extra.length > 0) {
                throw new S3Exception(S3Error.INVALID_ARGUMENT, "a key ending in '/' is a directory and holds no data");
            }
            CannedAcl acl = CannedAcl.of(exchange);
            Attributes bucketAttributes = namespace.bucket(bucket);
            namespace.mkdirs(path, acl != null ? acl.directoryMode() : CannedAcl.directoryMode(bucketAttributes));
            DefaultHttpHeaders headers = new DefaultHttpHeaders();
            headers.set("ETag", "\"d41d8cd98f00b204e9800998ecf8427e\"");
            exchange.respond(200, headers, null);
            return;
        }
        ObjectRecord template = S3Requests.recordFrom(exchange);
        ObjectTags tags = ObjectTags.fromHeader(exchange.header("x-amz-tagging"));
        ServerSideEncryption sse = ServerSideEncryption.forWrite(exchange, namespace.channel());
        CannedAcl acl = CannedAcl.of(exchange);
        CheckedBody checked = S3Requests.checkedBody(exchange, body);
        Attributes directory = namespace.objectDirectory(bucket, key);
        int mode = CannedAcl.fileMode(acl, directory);
        S3Namespace.Replacing replacing = writeCondition(exchange, bucket, key);
        ObjectEncryption.Keyed keyed = sse == null ? null : sse.newKeyed(client());
        S3Namespace.Extras extras = new S3Namespace.Extras(tags, keyed == null ? null : keyed.encryption());
        String etag;
        if (length >= 0 && directory.layout() != null && length <= directory.layout().mdtBytes()) {
            // fits in the Data-on-MDT part: the whole object is one metadata change
            byte[] bytes = ObjectIo.readBody(checked, (int) length);
            String md5 = HexFormat.of().formatHex(S3Namespace.md5().digest(bytes));
            if (keyed != null) {
                keyed.cipher().apply(0, bytes, 0, bytes.length);
            }
            etag = namespace.writeWholeObject(directory, Names.lastName(path), mode, template.withChecksum(checked.objectChecksum()), extras,
                    replacing, bytes, md5).etag();
        } else {
            dev.plinth.client.ObjectCipher encryptor = keyed == null ? null : keyed.cipher();
            etag = namespace.writeObject(directory, Names.lastName(path), mode, () -> template.withChecksum(checked.objectChecksum()), () -> extras,
                    replacing, file -> HexFormat.of().formatHex(ObjectIo.writeBody(checked, file, length, Layout.FILE_SIZE_MAX, encryptor).md5())).etag();
        }
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("ETag", "\"" + etag + "\"");
        setChecksumHeaders(headers, checked.objectChecksum());
        ServerSideEncryption.setResponseHeaders(headers, extras.encryption(), sse);
        exchange.respond(200, headers, null);
    }

    /** x-amz-checksum-ALGORITHM and x-amz-checksum-type for a checksum (none for null), as PUT, UploadPart and GET answer them. */
    static void setChecksumHeaders(DefaultHttpHeaders headers, ObjectRecord.Checksum checksum) {
        Checksums.Algorithm algorithm = checksum == null ? null : checksum.knownAlgorithm();
        if (algorithm != null) {
            headers.set(algorithm.header(), checksum.value());
            headers.set("x-amz-checksum-type", checksum.type());
        }
    }

    /**
     * What a write's If-Match and If-None-Match allow it to replace. If-Match is checked against
     * the object now, and the write then replaces only that file (a write racing in between makes
     * it fail with 412 rather than be overwritten); If-None-Match takes only "*", as in S3.
     */
    S3Namespace.Replacing writeCondition(S3Exchange exchange, String bucket, String key) {
        String ifNoneMatch = exchange.header("If-None-Match");
        String ifMatch = exchange.header("If-Match");
        if (ifNoneMatch != null && !ifNoneMatch.strip().equals("*")) {
            throw new S3Exception(S3Error.NOT_IMPLEMENTED, "a write's If-None-Match takes only '*'");
        }
        if (ifMatch == null && ifNoneMatch == null) {
            return S3Namespace.Replacing.ANYTHING;
        }
        S3Namespace.Found found = namespace.findObject(bucket, key);
        if (ifMatch == null) {
            // checked now so the answer is a plain 412 (a CompleteMultipartUpload's may be in a streamed body later);
            // the write itself still fails if one races in between
            if (found != null && !found.attributes().isDirectory()) {
                throw new S3Exception(S3Error.PRECONDITION_FAILED, "the object exists (If-None-Match: *)");
            }
            return S3Namespace.Replacing.NOTHING;
        }
        if (found == null || found.attributes().isDirectory()) {
            throw new S3Exception(S3Error.NO_SUCH_KEY, "the key '" + key + "' does not exist (If-Match)");
        }
        S3Requests.requireReadable(client(), found.attributes());
        if (ifNoneMatch != null || !Conditions.matches(ifMatch, S3Namespace.etag(found.attributes(), found.record()))) {
            throw new S3Exception(S3Error.PRECONDITION_FAILED, "at least one of the preconditions you specified did not hold");
        }
        return S3Namespace.Replacing.only(found.attributes().inodeId());
    }

    void headObject(S3Exchange exchange, String bucket, String key) {
        getObject(exchange, bucket, key, false);
    }

    /**
     * Objects up to this size are read whole before the answer without opening their file, so a
     * GET of a small object costs no metadata change (see {@link #readSmall}).
     */
    static final long SMALL_OBJECT_BYTES = 1 << 20;

    void getObject(S3Exchange exchange, String bucket, String key, boolean withBody) {
        getObject(exchange, bucket, key, withBody, REMOVED_LOOKUPS_MAX);
    }

    /** How often a GET looks a key up when the object it found is removed before the answer starts. */
    private static final int REMOVED_LOOKUPS_MAX = 3;

    private void getObject(S3Exchange exchange, String bucket, String key, boolean withBody, int lookupsLeft) {
        ServerSideEncryption brought = ServerSideEncryption.forRead(exchange, namespace.channel());
        S3Namespace.Found kept = exchange.takeLookup();
        S3Namespace.Found found = kept != null ? kept : namespace.object(bucket, key, withBody ? Layout.MDT_BYTES_MAX : 0);
        Attributes attributes = found.attributes();
        Decryption decryption = decryption(exchange, found, brought);
        byte[] inlineObject = found.bytes();
        if (found.whole()) {
            // all of it on the MDT: bytes, attributes and record came in one query, from one snapshot (and only if readable)
            byte[] plain = inlineObject;
            if (decryption != null) {
                plain = inlineObject.clone();
                decryption.cipher().apply(0, plain, 0, plain.length);
            }
            byte[] answered = plain;
            serveObject(exchange, attributes, found.record(), (offset, length) -> Unpooled.wrappedBuffer(answered, (int) offset, length), true,
                    decryption);
            return;
        }
        if (attributes.isDirectory() || !withBody) {
            // HEAD needs no open file: it answers from one consistent stat, to callers who may read the object
            S3Requests.requireReadable(client(), attributes);
            serveObject(exchange, attributes, found.record(), null, withBody, decryption);
            return;
        }
        if (NonBlocking.active()) {
            // the targets answer later: the request goes to a thread here, not in the read, so that no read-ahead
            // starts only to be dropped, and with its lookup, so that it is not made twice
            exchange.keepLookup(found);
            NonBlocking.check("a read of the object from the targets");
        }
        try {
            if (attributes.sizeBytes() <= SMALL_OBJECT_BYTES) {
                ByteBuf whole = readSmall(found, decryption);
                try {
                    serveObject(exchange, attributes, found.record(), (offset, length) -> whole.retainedSlice((int) offset, length), true,
                            decryption);
                } finally {
                    whole.release();
                }
                return;
            }
            S3Requests.requireReadable(client(), attributes); // its headers come from the lookup
            try (LargeObject bytes = new LargeObject(found, decryption)) {
                serveObject(exchange, attributes, found.record(), bytes, true, decryption);
            }
        } catch (PlinthException e) {
            // removed (or replaced) between the lookup and a read that asks the MDT for the file's first bytes: look again
            if ((e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.STALE_HANDLE) && !exchange.responseStarted() && lookupsLeft > 1) {
                getObject(exchange, bucket, key, true, lookupsLeft - 1);
                return;
            }
            throw S3Namespace.translate(e);
        }
    }

    /** How a GET or HEAD reads an encrypted object: as stored, with the key the request brought (an SSE-C object's). */
    record Decryption(ObjectEncryption stored, ServerSideEncryption brought, dev.plinth.client.ObjectCipher cipher) {}

    /**
     * The decryption an object found needs (null: it is not encrypted), checked against what the
     * request brought: an SSE-C object needs its key, a plain one refuses SSE-C parameters. The
     * encryption record is a second query, made on a thread (not an event loop).
     */
    private Decryption decryption(S3Exchange exchange, S3Namespace.Found found, ServerSideEncryption brought) {
        Attributes attributes = found.attributes();
        if (attributes.isDirectory() || !attributes.encrypted()) {
            ServerSideEncryption.requireNoneFor(brought);
            return null;
        }
        S3Requests.requireReadable(client(), attributes);
        if (NonBlocking.active()) {
            exchange.keepLookup(found);
            NonBlocking.check("an encrypted object's key");
        }
        ObjectEncryption stored = namespace.encryption(attributes.inodeId());
        return new Decryption(stored, brought, ServerSideEncryption.readCipher(client(), stored, brought));
    }

    /**
     * The file a lookup found, as this request's caller's handle that reads it without an open
     * ({@link PlinthClient#openLookedUp}), decrypting what it reads where the object is encrypted.
     */
    private PlinthFile openLookedUp(S3Namespace.Found found, Decryption decryption) {
        PlinthFile file = client().objects().openLookedUp(found.attributes(), found.bytes(), found.lookupSentNanos());
        if (decryption != null) {
            file.decryptWith(decryption.cipher());
        }
        return file;
    }

    /**
     * A large object's bytes, read from the file its lookup found without opening it
     * ({@link PlinthClient#openLookedUp}): an open and a close were two metadata changes (Raft
     * entries) per GET, the only ones, and a quarter of a 4 MiB GET's time. A GET still reading
     * seconds after its lookup opens the file then; if the object was removed meanwhile, it fails
     * mid-answer and the connection is cut (the client sees a short body). The file is made a
     * handle only once the answer is known to carry bytes, and its read-ahead stays within the
     * answer's range ({@link PlinthFile#adviseSequential}). Of a released object, the answer waits
     * until its range is restored: a copy found damaged is then still a 500, not a cut body.
     */
    private final class LargeObject implements ObjectBytes, AutoCloseable {
        private final S3Namespace.Found found;
        private final Decryption decryption;
        private PlinthFile file;

        LargeObject(S3Namespace.Found found, Decryption decryption) {
            this.found = found;
            this.decryption = decryption;
        }

        @Override
        public void prepare(long offset, long length) {
            file = openLookedUp(found, decryption);
            file.adviseSequential(offset, length);
            // a released object: the status comes before the body, so the range must be back (and checked) first
            file.awaitRestored(offset, length);
        }

        @Override
        public ByteBuf read(long offset, int length) {
            return readPiece(file, offset, length);
        }

        @Override
        public void close() {
            if (file != null) {
                file.close();
            }
        }
    }

    /**
     * The whole of a small file, read before the answer without opening it
     * ({@link PlinthClient#openLookedUp}: what is read within seconds of the lookup is the file's,
     * even if the file is removed meanwhile). Fails with NOT_FOUND if the file went away before a
     * read that asks the MDT for its first bytes. The file was checked with a {@code getattr}
     * after the read (note 29), a third metadata query per GET.
     */
    private ByteBuf readSmall(S3Namespace.Found found, Decryption decryption) {
        int size = (int) found.attributes().sizeBytes();
        ByteBuf whole = PooledByteBufAllocator.DEFAULT.directBuffer(Math.max(size, 1));
        boolean kept = false;
        try {
            if (size > 0) {
                try (PlinthFile file = openLookedUp(found, decryption)) {
                    if (ObjectIo.readFully(file, 0, whole.nioBuffer(0, size)) < size) {
                        throw new PlinthException(ErrorCode.STALE_HANDLE, "the object ended early while it was read");
                    }
                }
            }
            whole.writerIndex(size);
            kept = true;
            return whole;
        } finally {
            if (!kept) {
                whole.release();
            }
        }
    }

    /**
     * {@code length} bytes of an open file from {@code offset}, in a buffer the caller owns: the
     * client's verified buffers themselves, not a copy (a large GET's bytes were copied once more
     * here, a tenth of the gateway's CPU per GiB).
     */
    private static ByteBuf readPiece(PlinthFile file, long offset, int length) {
        java.util.List<ByteBuf> buffers = file.readBuffers(offset, length); // all of it, short only at the end of the file
        int read = buffers.stream().mapToInt(ByteBuf::readableBytes).sum();
        if (read < length) {
            buffers.forEach(ByteBuf::release);
            throw new S3Exception(S3Error.INTERNAL_ERROR, "the object shrank while it was read");
        }
        if (buffers.size() == 1) {
            return buffers.getFirst();
        }
        io.netty.buffer.CompositeByteBuf piece = PooledByteBufAllocator.DEFAULT.compositeDirectBuffer(PIECE_COMPONENTS_MAX);
        for (ByteBuf buffer : buffers) {
            piece.addComponent(true, buffer);
        }
        return piece;
    }

    /** Enough for a piece made of a few stripes' buffers and 64 KiB runs of a hole, without a merging copy. */
    private static final int PIECE_COMPONENTS_MAX = 64;

    /** Where the bytes of a GET come from: a piece at a time, each a buffer the caller then owns. */
    private interface ObjectBytes {
        /** Called once the answer will carry {@code length} bytes from {@code offset}, before any {@link #read}. */
        default void prepare(long offset, long length) {}

        ByteBuf read(long offset, int length);
    }

    /**
     * Answers a GET or HEAD of an object (and its S3 record) whose bytes come from {@code bytes}
     * (null for a directory key or a HEAD), decrypted as {@code decryption} says (null: not encrypted).
     */
    private void serveObject(S3Exchange exchange, Attributes attributes, ObjectRecord record, ObjectBytes bytes, boolean withBody,
                             Decryption decryption) {
        long size = attributes.isDirectory() ? 0 : attributes.sizeBytes();
        String etag = attributes.isDirectory() ? "d41d8cd98f00b204e9800998ecf8427e" : S3Namespace.etag(attributes, record);
        long modifiedMillis = attributes.mtimeNanos() / 1_000_000;
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("ETag", "\"" + etag + "\"");
        headers.set("Last-Modified", Http.date(modifiedMillis));
        headers.set("Accept-Ranges", "bytes");
        headers.set("Content-Type", record == null || record.contentType() == null ? "binary/octet-stream" : record.contentType());
        if (decryption != null) {
            ServerSideEncryption.setResponseHeaders(headers, decryption.stored(), decryption.brought());
        }
        if (record != null) {
            for (ObjectRecord.Header header : record.headers()) {
                headers.set(header.name(), header.value());
            }
            for (ObjectRecord.Header header : record.userMetadata()) {
                headers.set("x-amz-meta-" + header.name(), header.value());
            }
        }
        for (var override : exchange.query()) {
            if (override.getKey().startsWith("response-") && withBody) {
                headers.set(override.getKey().substring("response-".length()), override.getValue());
            }
        }
        Integer conditional = Conditions.check(exchange, etag, modifiedMillis);
        if (conditional != null) {
            if (conditional == 304) {
                headers.remove("Content-Type");
                exchange.respond(304, headers, null);
                return;
            }
            throw new S3Exception(S3Error.PRECONDITION_FAILED, "at least one of the preconditions you specified did not hold");
        }
        long start = 0;
        long end = size; // exclusive
        int status = 200;
        long[] range;
        if (exchange.parameter("partNumber") != null) {
            range = partRange(exchange, attributes, record, size);
            if (record != null && record.multipart()) {
                headers.set("x-amz-mp-parts-count", String.valueOf(record.partSizes().size()));
            }
        } else {
            range = Conditions.range(exchange.header("Range"), size);
        }
        if (range != null) {
            start = range[0];
            end = range[1];
            status = 206;
            headers.set("Content-Range", "bytes " + start + "-" + (end - 1) + "/" + size);
        }
        if (record != null && "ENABLED".equalsIgnoreCase(exchange.header("x-amz-checksum-mode"))) {
            setChecksumHeaders(headers, answeredChecksum(exchange, attributes, record, range));
        }
        if (!withBody) {
            headers.set("Content-Length", String.valueOf(end - start));
            exchange.respond(status, headers, null);
            return;
        }
        if (end - start == 0) {
            exchange.respond(status, headers, new byte[0]);
            return;
        }
        bytes.prepare(start, end - start);
        if (end - start <= ObjectIo.PIECE_BYTES) {
            // one piece: headers and bytes in one write (a small GET streamed cost three hand-offs to the event loop)
            exchange.respondBuffer(status, headers, bytes.read(start, (int) (end - start)));
            return;
        }
        ByteBuf first = bytes.read(start, ObjectIo.PIECE_BYTES); // before the answer starts, so that a failure can still be answered
        exchange.startStream(status, headers, end - start);
        exchange.streamChunk(first);
        for (long offset = start + ObjectIo.PIECE_BYTES; offset < end; ) {
            int length = (int) Math.min(ObjectIo.PIECE_BYTES, end - offset);
            exchange.streamChunk(bytes.read(offset, length));
            offset += length;
        }
        exchange.endStream();
    }

    /**
     * The checksum a GET or HEAD with x-amz-checksum-mode answers with: the object's for all of
     * it, a part's for a part (partNumber) whose checksum the upload kept, none for a byte range or
     * an object changed since it was written.
     */
    private static ObjectRecord.Checksum answeredChecksum(S3Exchange exchange, Attributes attributes, ObjectRecord record, long[] range) {
        ObjectRecord.Checksum checksum = record.currentChecksum(attributes);
        if (checksum == null) {
            return null;
        }
        if (range == null) {
            return checksum;
        }
        if (exchange.parameter("partNumber") == null || record.partChecksums().isEmpty()) {
            return null;
        }
        int number = Integer.parseInt(exchange.parameter("partNumber"));
        return new ObjectRecord.Checksum(checksum.algorithm(), Checksums.Algorithm.COMPOSITE, record.partChecksums().get(number - 1));
    }

    /**
     * The bytes of part {@code partNumber} of an object a multipart upload made (an object in one
     * piece has part 1, all of it); InvalidPartNumber past its last part. Parts are known only
     * while the object is as S3 wrote it (its record's ETag is current).
     */
    private static long[] partRange(S3Exchange exchange, Attributes attributes, ObjectRecord record, long size) {
        if (exchange.header("Range") != null) {
            throw new S3Exception(S3Error.INVALID_REQUEST, "cannot specify both a Range header and a partNumber");
        }
        int number;
        try {
            number = Integer.parseInt(exchange.parameter("partNumber"));
        } catch (NumberFormatException e) {
            number = 0;
        }
        if (number < 1 || number > MultipartOperations.PARTS_MAX) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "partNumber must be 1.." + MultipartOperations.PARTS_MAX);
        }
        boolean current = record != null && S3Namespace.etag(attributes, record).equals(record.etag());
        List<Long> sizes = current && record.multipart() ? record.partSizes() : List.of(size);
        if (number > sizes.size()) {
            throw new S3Exception(S3Error.INVALID_PART_NUMBER, "the object has " + sizes.size() + " part(s), not " + number);
        }
        if (sizes.size() == 1) {
            return null; // the one part is the whole object
        }
        long start = 0;
        for (int i = 0; i < number - 1; i++) {
            start += sizes.get(i);
        }
        return new long[] {start, start + sizes.get(number - 1)};
    }

    /**
     * GetObjectAttributes: what x-amz-object-attributes asks for of ETag, Checksum, ObjectParts,
     * StorageClass and ObjectSize, without the bytes. Parts are listed (paged by x-amz-max-parts and
     * x-amz-part-number-marker) for an object a multipart upload made and has not been changed since.
     */
    void getObjectAttributes(S3Exchange exchange, String bucket, String key) {
        String asked = exchange.joinedHeader("x-amz-object-attributes"); // the Java SDK sends one header per attribute
        if (asked == null || asked.isBlank()) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "The x-amz-object-attributes header specifying the attributes to be retrieved is either missing or empty");
        }
        java.util.Set<String> attributesAsked = new java.util.HashSet<>();
        for (String name : asked.split(",")) {
            String attribute = name.strip();
            if (!List.of("ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize").contains(attribute)) {
                throw new S3Exception(S3Error.INVALID_ARGUMENT, "Invalid attribute name specified: " + attribute);
            }
            attributesAsked.add(attribute);
        }
        S3Namespace.Found found = namespace.object(bucket, key);
        Attributes attributes = found.attributes();
        S3Requests.requireReadable(client(), attributes);
        decryption(exchange, found, ServerSideEncryption.forRead(exchange, namespace.channel())); // an SSE-C object's attributes need its key, as its bytes do
        ObjectRecord record = found.record();
        boolean current = record != null && S3Namespace.etag(attributes, record).equals(record.etag());
        Xml xml = Xml.document("GetObjectAttributesResponse");
        if (attributesAsked.contains("ETag")) {
            xml.element("ETag", attributes.isDirectory() ? "d41d8cd98f00b204e9800998ecf8427e" : S3Namespace.etag(attributes, record));
        }
        ObjectRecord.Checksum checksum = record == null ? null : record.currentChecksum(attributes);
        if (attributesAsked.contains("Checksum") && checksum != null && checksum.knownAlgorithm() != null) {
            xml.open("Checksum").element(checksum.knownAlgorithm().element(), checksum.value()).element("ChecksumType", checksum.type())
                    .close("Checksum");
        }
        if (attributesAsked.contains("ObjectParts") && current && record.multipart()) {
            int marker = exchange.header("x-amz-part-number-marker") == null ? 0
                    : S3Requests.boundedCount(exchange.header("x-amz-part-number-marker"), "x-amz-part-number-marker");
            int maxParts = S3Requests.boundedCount(exchange.header("x-amz-max-parts"), "x-amz-max-parts");
            int total = record.partSizes().size();
            int last = Math.min(total, marker + maxParts);
            xml.open("ObjectParts").element("PartsCount", total).element("PartNumberMarker", marker).element("MaxParts", maxParts)
                    .element("IsTruncated", last < total);
            if (last < total) {
                xml.element("NextPartNumberMarker", last);
            }
            Checksums.Algorithm algorithm = checksum == null ? null : checksum.knownAlgorithm();
            for (int number = marker + 1; number <= last; number++) {
                xml.open("Part").element("PartNumber", number).element("Size", record.partSizes().get(number - 1));
                if (algorithm != null && record.partChecksums().size() == total) {
                    xml.element(algorithm.element(), record.partChecksums().get(number - 1));
                }
                xml.close("Part");
            }
            xml.close("ObjectParts");
        }
        if (attributesAsked.contains("StorageClass")) {
            xml.element("StorageClass", "STANDARD");
        }
        if (attributesAsked.contains("ObjectSize")) {
            xml.element("ObjectSize", attributes.isDirectory() ? 0 : attributes.sizeBytes());
        }
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("Last-Modified", Http.date(attributes.mtimeNanos() / 1_000_000));
        headers.set("Content-Type", "application/xml");
        exchange.respond(200, headers, xml.end("GetObjectAttributesResponse").getBytes(java.nio.charset.StandardCharsets.UTF_8));
    }

    void deleteObject(S3Exchange exchange, String bucket, String key) {
        namespace.bucket(bucket);
        deleteKey(bucket, key);
        exchange.respond(204, null, null);
    }

    /** Deletes a key; a missing key is no error (S3 answers 204 either way). */
    private void deleteKey(String bucket, String key) {
        String path = namespace.objectPath(bucket, key);
        try {
            Attributes attributes = client().lstat(path);
            if (attributes.isDirectory() != key.endsWith("/")) {
                return; // "a" names a directory (or "a/" a file): no such object
            }
            client().delete(path);
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.NOT_A_DIRECTORY || e.code() == ErrorCode.DIRECTORY_NOT_EMPTY) {
                return;
            }
            throw S3Namespace.translate(e);
        }
        namespace.removeEmptyParents(bucket, key);
    }

    void deleteObjects(S3Exchange exchange, InputStream body, String bucket) {
        namespace.bucket(bucket);
        Element root = Xml.parse(S3Requests.checkedBody(exchange, body));
        if (!"Delete".equals(root.getLocalName())) {
            throw new S3Exception(S3Error.MALFORMED_XML, "the body must be a <Delete> document");
        }
        boolean quiet = "true".equalsIgnoreCase(Xml.childText(root, "Quiet"));
        List<Element> objects = Xml.children(root, "Object");
        if (objects.size() > 1000) {
            throw new S3Exception(S3Error.MALFORMED_XML, "at most 1000 keys per DeleteObjects request");
        }
        Xml xml = Xml.document("DeleteResult");
        for (Element object : objects) {
            String key = Xml.childTextExact(object, "Key"); // keys are byte strings: "_ " is not "_"
            try {
                if (key == null) {
                    throw new S3Exception(S3Error.MALFORMED_XML, "an <Object> without <Key>");
                }
                deleteKey(bucket, key);
                if (!quiet) {
                    xml.open("Deleted").element("Key", key).close("Deleted");
                }
            } catch (S3Exception e) {
                xml.open("Error").element("Key", key == null ? "" : key).element("Code", e.error().code())
                        .element("Message", e.getMessage()).close("Error");
            }
        }
        exchange.respondXml(200, xml.end("DeleteResult"));
    }

    void copyObject(S3Exchange exchange, InputStream body, String bucket, String key) {
        CopySource source = CopySource.parse(exchange.header("x-amz-copy-source"));
        boolean replace = "REPLACE".equalsIgnoreCase(exchange.header("x-amz-metadata-directive"));
        String path = namespace.objectPath(bucket, key);
        if (!replace && path.equals(namespace.objectPath(source.bucket(), source.key()))) {
            throw new S3Exception(S3Error.INVALID_REQUEST,
                    "this copy request is illegal because it is trying to copy an object to itself without changing its metadata");
        }
        ServerSideEncryption targetEncryption = ServerSideEncryption.forWrite(exchange, namespace.channel());
        try (PlinthFile from = namespace.openObject(source.bucket(), source.key(), ServerSideEncryption.forCopySource(exchange, namespace.channel()))) {
            Attributes sourceAttributes = from.attributes();
            ObjectRecord sourceRecord = namespace.record(sourceAttributes.inodeId());
            String sourceEtag = S3Namespace.etag(sourceAttributes, sourceRecord);
            if (Conditions.checkCopySource(exchange, sourceEtag, sourceAttributes.mtimeNanos() / 1_000_000)) {
                throw new S3Exception(S3Error.PRECONDITION_FAILED, "at least one of the copy source preconditions did not hold");
            }
            // a copy is one piece, whatever the source was: the source's upload and parts are not the copy's
            ObjectRecord template = replace || sourceRecord == null ? S3Requests.recordFrom(exchange)
                    : sourceRecord.withParts(null, List.of(), List.of(), null);
            ObjectTags tags = "REPLACE".equalsIgnoreCase(exchange.header("x-amz-tagging-directive"))
                    ? ObjectTags.fromHeader(exchange.header("x-amz-tagging")) : tagging.tags(sourceAttributes.inodeId());
            // the copy's checksum: of the algorithm asked for, else of the source's; computed over the copied bytes
            Checksums.Algorithm algorithm = checksumAlgorithm(exchange.header("x-amz-checksum-algorithm"));
            ObjectRecord.Checksum sourceChecksum = sourceRecord == null ? null : sourceRecord.currentChecksum(sourceAttributes);
            if (algorithm == null && sourceChecksum != null) {
                algorithm = sourceChecksum.knownAlgorithm();
            }
            Checksums.Running running = algorithm == null ? null : algorithm.running();
            Checksums.Algorithm copiedAlgorithm = algorithm;
            java.util.concurrent.atomic.AtomicReference<ObjectRecord.Checksum> checksum = new java.util.concurrent.atomic.AtomicReference<>();
            CannedAcl acl = CannedAcl.of(exchange);
            Attributes directory = namespace.objectDirectory(bucket, key);
            ObjectEncryption.Keyed keyed = targetEncryption == null ? null : targetEncryption.newKeyed(client());
            S3Namespace.Extras extras = new S3Namespace.Extras(tags, keyed == null ? null : keyed.encryption());
            S3Namespace.Written written = namespace.writeObject(directory, Names.lastName(path), CannedAcl.fileMode(acl, directory),
                    () -> template.withChecksum(checksum.get()), () -> extras, S3Namespace.Replacing.ANYTHING, target -> {
                        String etag = copyRange(from, 0, sourceAttributes.sizeBytes(), target, running, keyed == null ? null : keyed.cipher());
                        if (running != null) {
                            checksum.set(new ObjectRecord.Checksum(copiedAlgorithm.name(), Checksums.Algorithm.FULL_OBJECT, running.base64()));
                        }
                        return etag;
                    });
            Xml xml = Xml.document("CopyObjectResult").element("LastModified", Http.isoDate(written.attributes().mtimeNanos() / 1_000_000))
                    .element("ETag", "\"" + written.etag() + "\"");
            if (checksum.get() != null) {
                xml.element(copiedAlgorithm.element(), checksum.get().value()).element("ChecksumType", checksum.get().type());
            }
            DefaultHttpHeaders headers = new DefaultHttpHeaders();
            headers.set("Content-Type", "application/xml");
            ServerSideEncryption.setResponseHeaders(headers, extras.encryption(), targetEncryption);
            exchange.respond(200, headers, xml.end("CopyObjectResult").getBytes(java.nio.charset.StandardCharsets.UTF_8));
        } catch (PlinthException e) {
            throw S3Namespace.translate(e);
        }
    }

    /** The algorithm an x-amz-checksum-algorithm header names (null: none); an unknown one is refused. */
    static Checksums.Algorithm checksumAlgorithm(String header) {
        if (header == null) {
            return null;
        }
        Checksums.Algorithm algorithm = Checksums.Algorithm.named(header);
        if (algorithm == null) {
            throw new S3Exception(S3Error.INVALID_REQUEST, "Checksum algorithm provided is unsupported. Please try again with any of the valid types: "
                    + "[CRC32, CRC32C, CRC64NVME, SHA1, SHA256]");
        }
        return algorithm;
    }


    /**
     * Copies bytes [start, end) of {@code from} to the start of {@code target}, feeding {@code checksum}
     * and encrypting with {@code encryptor} (either may be null); returns the MD5 in hex of what it read.
     */
    static String copyRange(PlinthFile from, long start, long end, PlinthFile target, Checksums.Running checksum,
                            dev.plinth.client.ObjectCipher encryptor) {
        java.security.MessageDigest md5 = S3Namespace.md5();
        ObjectIo.copy(from, start, end - start, target, 0, md5, checksum, encryptor);
        return HexFormat.of().formatHex(md5.digest());
    }

    /** x-amz-copy-source: "bucket/key" or "/bucket/key", URL-encoded, maybe with ?versionId. */
    record CopySource(String bucket, String key) {
        static CopySource parse(String header) {
            if (header == null) {
                throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-copy-source is missing");
            }
            String value = header.strip();
            int question = value.indexOf('?');
            if (question >= 0) {
                value = value.substring(0, question);
            }
            try {
                value = Http.decodeStrict(value, false);
            } catch (Http.BadEncodingException e) {
                throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-copy-source: " + e.getMessage());
            }
            if (value.startsWith("/")) {
                value = value.substring(1);
            }
            int slash = value.indexOf('/');
            if (slash <= 0 || slash == value.length() - 1) {
                throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-copy-source must be bucket/key");
            }
            return new CopySource(value.substring(0, slash), value.substring(slash + 1));
        }
    }
}
