package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Layout;
import dev.plinth.common.Names;
import dev.plinth.common.NonBlocking;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.PooledByteBufAllocator;
import io.netty.buffer.Unpooled;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.UUID;
import org.w3c.dom.Element;

/**
 * The S3 operations over the namespace, one method each, reached from {@link S3Router}. Every
 * method runs as the request's caller; see {@link S3Namespace} for how names map to paths.
 */
final class S3Operations {
    static final long PART_BYTES_MIN = 5L << 20;
    static final int PARTS_MAX = 10_000;
    private static final java.util.regex.Pattern UPLOAD_ID = java.util.regex.Pattern.compile("[0-9a-f-]{36}");
    private static final List<String> STORED_HEADERS = List.of("content-encoding", "content-disposition", "content-language",
            "cache-control", "expires");

    private final S3Namespace namespace;
    private final ObjectListing listing;
    private final String region;

    S3Operations(S3Namespace namespace, String region) {
        this.namespace = namespace;
        this.listing = new ObjectListing(namespace.client());
        this.region = region;
    }

    private PlinthClient client() {
        return namespace.client();
    }

    // ---- buckets

    /** Where a bucket keeps the LocationConstraint it was created with. */
    static final String LOCATION_XATTR = "trusted.plinth.s3.location";
    private static final int BUCKETS_PAGE_MAX = 10_000;
    private static final java.util.regex.Pattern REGION_NAME = java.util.regex.Pattern.compile("[a-z0-9-]{1,64}");

    /** The buckets the caller may list (read its directory), in name order; paged by max-buckets and continuation-token. */
    void listBuckets(S3Exchange exchange) {
        String prefix = orEmpty(exchange.parameter("prefix"));
        int max = BUCKETS_PAGE_MAX;
        if (exchange.parameter("max-buckets") != null) {
            try {
                max = Integer.parseInt(exchange.parameter("max-buckets").strip());
            } catch (NumberFormatException e) {
                max = 0;
            }
            if (max < 1 || max > BUCKETS_PAGE_MAX) {
                throw new S3Exception(S3Error.INVALID_ARGUMENT, "max-buckets must be a number from 1 to " + BUCKETS_PAGE_MAX);
            }
        }
        String after = "";
        String token = exchange.parameter("continuation-token");
        if (token != null) {
            try {
                after = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw new S3Exception(S3Error.INVALID_ARGUMENT, "the continuation token is not valid");
            }
        }
        dev.plinth.common.Credentials caller = client().caller();
        List<PlinthClient.Listed> buckets = new ArrayList<>();
        for (PlinthClient.Listed listed : client().listWithAttributes(namespace.rootPath())) {
            Attributes attributes = listed.attributes();
            String name = listed.entry().name();
            if (attributes.isDirectory() && S3Namespace.validBucketName(name) && name.startsWith(prefix) && name.compareTo(after) > 0
                    && dev.plinth.common.Permissions.allowed(caller, attributes.mode(), attributes.uid(), attributes.gid(), true,
                    dev.plinth.common.Permissions.READ)) {
                buckets.add(listed);
            }
        }
        buckets.sort(java.util.Comparator.comparing(listed -> listed.entry().name()));
        boolean truncated = buckets.size() > max;
        String owner = String.valueOf(caller.uid());
        Xml xml = Xml.document("ListAllMyBucketsResult").open("Buckets");
        for (PlinthClient.Listed listed : buckets.subList(0, Math.min(max, buckets.size()))) {
            xml.open("Bucket").element("Name", listed.entry().name())
                    .element("CreationDate", Http.isoDate(listed.attributes().ctimeNanos() / 1_000_000)).close("Bucket");
        }
        xml.close("Buckets").open("Owner").element("ID", owner).element("DisplayName", owner).close("Owner");
        if (truncated) {
            String last = buckets.get(max - 1).entry().name();
            xml.element("ContinuationToken", Base64.getUrlEncoder().withoutPadding().encodeToString(last.getBytes(StandardCharsets.UTF_8)));
        }
        if (exchange.parameter("prefix") != null) {
            xml.element("Prefix", prefix);
        }
        exchange.respondXml(200, xml.end("ListAllMyBucketsResult"));
    }

    /**
     * Makes a bucket owned by the caller, private unless its ACL says otherwise. Any key may make
     * one (S3's rule), though the root directory is root's: the gateway makes it as root and hands
     * it over ({@link S3Namespace#mkdirOwnedByCaller}).
     */
    void createBucket(S3Exchange exchange, InputStream body, String bucket) {
        String path = namespace.bucketPath(bucket);
        CannedAcl acl = CannedAcl.of(exchange);
        String location = locationConstraint(body);
        List<dev.plinth.wire.messages.MetaMessages.Xattr> xattrs = location == null ? List.of()
                : List.of(new dev.plinth.wire.messages.MetaMessages.Xattr(LOCATION_XATTR, location.getBytes(StandardCharsets.UTF_8)));
        try {
            namespace.mkdirOwnedByCaller(path, (acl == null ? CannedAcl.PRIVATE : acl).directoryMode(), xattrs);
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.ALREADY_EXISTS) {
                throw S3Namespace.translate(e);
            }
            Attributes existing = namespace.asRoot(() -> client().stat(path));
            if (existing.uid() != client().caller().uid()) {
                throw new S3Exception(S3Error.BUCKET_ALREADY_EXISTS, "the bucket '" + bucket + "' exists and is another's");
            }
            if (!region.equals("us-east-1")) {
                throw new S3Exception(S3Error.BUCKET_ALREADY_OWNED_BY_YOU, "you own the bucket '" + bucket + "' already");
            }
            // us-east-1 answers a repeated CreateBucket of one's own bucket with success, and changes nothing
        }
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("Location", "/" + bucket);
        exchange.respond(200, headers, null);
    }

    /** The LocationConstraint of a CreateBucketConfiguration body, or null when there is none (the gateway's region). */
    private String locationConstraint(InputStream body) {
        byte[] bytes;
        try {
            bytes = body.readNBytes(Xml.BODY_BYTES_MAX + 1);
        } catch (java.io.IOException e) {
            throw new S3Exception(S3Error.INCOMPLETE_BODY, e.getMessage());
        }
        if (bytes.length == 0) {
            return null;
        }
        String location = Xml.childText(Xml.parse(new java.io.ByteArrayInputStream(bytes)), "LocationConstraint");
        if (location == null || location.isEmpty()) {
            return null;
        }
        if (!REGION_NAME.matcher(location).matches() || location.equals("us-east-1")) {
            // S3 names no us-east-1 constraint: that region is the absence of one
            throw new S3Exception(S3Error.INVALID_LOCATION_CONSTRAINT, "the location constraint '" + location + "' is not valid");
        }
        return location;
    }

    /**
     * Deletes an empty bucket, and the multipart uploads still in progress into it. Its owner may
     * (or root), as in S3, though its directory is in root's: the directory goes as root once the
     * owner is checked, and only if empty.
     */
    void deleteBucket(S3Exchange exchange, String bucket) {
        Attributes attributes = namespace.bucket(bucket);
        if (!client().caller().isRoot() && attributes.uid() != client().caller().uid()) {
            throw new S3Exception(S3Error.ACCESS_DENIED, "only the bucket's owner deletes it");
        }
        String path = namespace.bucketPath(bucket);
        try {
            namespace.asRoot(() -> {
                client().delete(path);
                return null;
            });
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.DIRECTORY_NOT_EMPTY) {
                throw new S3Exception(S3Error.BUCKET_NOT_EMPTY, "the bucket '" + bucket + "' is not empty");
            }
            throw S3Namespace.translate(e);
        }
        namespace.asRoot(() -> {
            removeTree(namespace.uploadsPath(bucket));
            return null;
        });
        exchange.respond(204, null, null);
    }

    /** Removes a directory and everything below it; what is gone already is no error. */
    private void removeTree(String path) {
        try {
            for (PlinthClient.Listed listed : client().listWithAttributes(path)) {
                String child = path + "/" + listed.entry().name();
                if (listed.attributes().isDirectory()) {
                    removeTree(child);
                } else {
                    client().delete(child);
                }
            }
            client().delete(path);
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.NOT_FOUND) {
                throw S3Namespace.translate(e);
            }
        }
    }

    /** The bucket's ACL as its directory's modes say (CannedAcl); for its owner or root. */
    void getBucketAcl(S3Exchange exchange, String bucket) {
        Attributes attributes = namespace.bucket(bucket);
        requireOwner(attributes);
        exchange.respondXml(200, CannedAcl.policy(attributes));
    }

    void putBucketAcl(S3Exchange exchange, InputStream body, String bucket) {
        Attributes attributes = namespace.bucket(bucket);
        applyAcl(exchange, body, attributes);
        exchange.respond(200, null, null);
    }

    void getObjectAcl(S3Exchange exchange, String bucket, String key) {
        Attributes attributes = namespace.object(bucket, key).attributes();
        requireOwner(attributes);
        exchange.respondXml(200, CannedAcl.policy(attributes));
    }

    void putObjectAcl(S3Exchange exchange, InputStream body, String bucket, String key) {
        Attributes attributes = namespace.object(bucket, key).attributes();
        applyAcl(exchange, body, attributes);
        exchange.respond(200, null, null);
    }

    /** An ACL is read and changed by its file's owner (or root), as POSIX modes are. */
    private void requireOwner(Attributes attributes) {
        if (!client().caller().isRoot() && attributes.uid() != client().caller().uid()) {
            throw new S3Exception(S3Error.ACCESS_DENIED, "only the owner reads or changes an ACL");
        }
    }

    /** PutBucketAcl and PutObjectAcl: a canned ACL (x-amz-acl) becomes the file's modes; a policy document is NotImplemented. */
    private void applyAcl(S3Exchange exchange, InputStream body, Attributes attributes) {
        CannedAcl acl = CannedAcl.of(exchange);
        byte[] document;
        try {
            document = body.readNBytes(1);
        } catch (java.io.IOException e) {
            throw new S3Exception(S3Error.INCOMPLETE_BODY, e.getMessage());
        }
        if (document.length > 0) {
            throw new S3Exception(S3Error.NOT_IMPLEMENTED, "ACL documents are not implemented; use a canned ACL (x-amz-acl)");
        }
        if (acl == null) {
            throw new S3Exception(S3Error.INVALID_REQUEST, "the request names no ACL (x-amz-acl)");
        }
        requireOwner(attributes);
        try {
            client().setAttr(attributes.inodeId(), dev.plinth.wire.messages.MetaMessages.SET_MODE, acl.applyTo(attributes), 0, 0, 0, 0, 0);
        } catch (PlinthException e) {
            throw S3Namespace.translate(e);
        }
    }

    void headBucket(S3Exchange exchange, String bucket) {
        namespace.bucket(bucket);
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("x-amz-bucket-region", region);
        exchange.respond(200, headers, null);
    }

    /** The LocationConstraint the bucket was made with; else the gateway's region (empty for us-east-1, as S3 answers). */
    void bucketLocation(S3Exchange exchange, String bucket) {
        Attributes attributes = namespace.bucket(bucket);
        String location = region.equals("us-east-1") ? "" : region;
        try {
            location = new String(namespace.asRoot(() -> client().getXattr(attributes.inodeId(), LOCATION_XATTR)), StandardCharsets.UTF_8);
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.NO_ATTRIBUTE) {
                throw S3Namespace.translate(e);
            }
        }
        String xml = Xml.HEADER + "<LocationConstraint xmlns=\"" + Xml.NAMESPACE + "\">" + location + "</LocationConstraint>";
        exchange.respondXml(200, xml);
    }

    void bucketVersioning(S3Exchange exchange, String bucket) {
        namespace.bucket(bucket);
        exchange.respondXml(200, Xml.document("VersioningConfiguration").end("VersioningConfiguration"));
    }

    // ---- listing

    void listObjects(S3Exchange exchange, String bucket, boolean version2) {
        Attributes bucketAttributes = namespace.bucket(bucket);
        String prefix = orEmpty(exchange.parameter("prefix"));
        String delimiter = exchange.parameter("delimiter");
        boolean urlEncode = "url".equals(exchange.parameter("encoding-type"));
        int maxKeys = boundedCount(exchange.parameter("max-keys"), "max-keys");
        String after;
        String token = exchange.parameter("continuation-token");
        if (version2) {
            after = orEmpty(exchange.parameter("start-after"));
            if (token != null) {
                try {
                    after = new String(Base64.getUrlDecoder().decode(token), StandardCharsets.UTF_8);
                } catch (IllegalArgumentException e) {
                    throw new S3Exception(S3Error.INVALID_ARGUMENT, "the continuation token is not valid");
                }
            }
        } else {
            after = orEmpty(exchange.parameter("marker"));
        }
        ObjectListing.Page page = listing.list(bucketAttributes.inodeId(), namespace.bucketPath(bucket), prefix,
                delimiter == null || delimiter.isEmpty() ? null : delimiter, after, maxKeys);
        String root = "ListBucketResult";
        // with encoding-type=url, version 1 encodes Delimiter, Marker, NextMarker and keys but echoes Prefix as given (clients
        // decode just those); version 2 encodes Prefix and StartAfter too
        Xml xml = Xml.document(root).element("Name", bucket).element("Prefix", version2 ? encode(prefix, urlEncode) : prefix);
        if (version2) {
            if (exchange.parameter("start-after") != null) {
                xml.element("StartAfter", encode(exchange.parameter("start-after"), urlEncode));
            }
            if (token != null) {
                xml.element("ContinuationToken", token);
            }
            xml.element("KeyCount", page.items().size());
        } else {
            xml.element("Marker", encode(after, urlEncode));
        }
        xml.element("MaxKeys", maxKeys);
        if (delimiter != null && !delimiter.isEmpty()) {
            xml.element("Delimiter", encode(delimiter, urlEncode));
        }
        if (urlEncode) {
            xml.element("EncodingType", "url");
        }
        xml.element("IsTruncated", page.truncated());
        if (page.truncated() && !page.items().isEmpty()) {
            String last = page.items().getLast().key();
            if (version2) {
                xml.element("NextContinuationToken", Base64.getUrlEncoder().withoutPadding().encodeToString(last.getBytes(StandardCharsets.UTF_8)));
            } else {
                xml.element("NextMarker", encode(last, urlEncode));
            }
        }
        boolean fetchOwner = !version2 || "true".equals(exchange.parameter("fetch-owner"));
        for (ObjectListing.Item item : page.items()) {
            if (item.commonPrefix()) {
                continue;
            }
            xml.open("Contents").element("Key", encode(item.key(), urlEncode));
            if (item.attributes() == null) { // an empty directory
                xml.element("LastModified", Http.isoDate(System.currentTimeMillis())).element("ETag", "\"d41d8cd98f00b204e9800998ecf8427e\"")
                        .element("Size", 0);
            } else {
                Attributes attributes = item.attributes();
                xml.element("LastModified", Http.isoDate(attributes.mtimeNanos() / 1_000_000))
                        .element("ETag", "\"" + S3Namespace.etag(attributes, item.record()) + "\"")
                        .element("Size", attributes.sizeBytes());
                if (fetchOwner) {
                    xml.open("Owner").element("ID", attributes.uid()).element("DisplayName", attributes.uid()).close("Owner");
                }
            }
            xml.element("StorageClass", "STANDARD").close("Contents");
        }
        for (ObjectListing.Item item : page.items()) {
            if (item.commonPrefix()) {
                xml.open("CommonPrefixes").element("Prefix", encode(item.key(), urlEncode)).close("CommonPrefixes");
            }
        }
        exchange.respondXml(200, xml.end(root));
    }

    private static String encode(String value, boolean urlEncode) {
        return urlEncode ? SigV4.uriEncode(value, true) : value;
    }

    private static String orEmpty(String value) {
        return value == null ? "" : value;
    }

    // ---- objects

    /** The stored record for a new object from the request's headers. */
    private static ObjectRecord recordFrom(S3Exchange exchange) {
        List<ObjectRecord.Header> headers = new ArrayList<>();
        List<ObjectRecord.Header> user = new ArrayList<>();
        int userBytes = 0;
        for (var header : exchange.headers()) {
            String name = header.getKey().toLowerCase(Locale.ROOT);
            if (name.startsWith("x-amz-meta-")) {
                user.add(new ObjectRecord.Header(name.substring("x-amz-meta-".length()), header.getValue()));
                userBytes += name.length() + header.getValue().length();
            } else if (name.equals("content-encoding")) {
                // aws-chunked says how this request's body was framed, not what the object is: it is not kept
                String encoding = java.util.Arrays.stream(header.getValue().split(",")).map(String::strip)
                        .filter(token -> !token.isEmpty() && !token.equalsIgnoreCase("aws-chunked"))
                        .collect(java.util.stream.Collectors.joining(","));
                if (!encoding.isEmpty()) {
                    headers.add(new ObjectRecord.Header(name, encoding));
                }
            } else if (STORED_HEADERS.contains(name)) {
                headers.add(new ObjectRecord.Header(name, header.getValue()));
            }
        }
        if (userBytes > 2048) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "user metadata is limited to 2 KB (S3's limit)");
        }
        String contentType = exchange.header("Content-Type");
        return new ObjectRecord(ObjectRecord.FORMAT_VERSION, null, 0, 0, contentType == null ? "binary/octet-stream" : contentType, headers, user);
    }

    private static long contentLength(S3Exchange exchange) {
        String decoded = exchange.header("x-amz-decoded-content-length");
        String length = decoded != null ? decoded : exchange.header("Content-Length");
        if (length == null) {
            return -1;
        }
        try {
            return Long.parseLong(length.strip());
        } catch (NumberFormatException e) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "bad content length '" + length + "'");
        }
    }

    /** The body as the handler should read it: with Content-MD5 and x-amz-checksum-* headers checked at its end. */
    private static InputStream checkedBody(S3Exchange exchange, InputStream body) {
        String contentMd5 = exchange.header("Content-MD5");
        if (contentMd5 != null) {
            try {
                if (Base64.getDecoder().decode(contentMd5.strip()).length != 16) {
                    throw new IllegalArgumentException();
                }
            } catch (IllegalArgumentException e) {
                throw new S3Exception(S3Error.INVALID_DIGEST, "Content-MD5 is not a base64 MD5");
            }
            body = new DigestCheckingStream(body, Checksums.forHeader("md5"), contentMd5.strip(), false, S3Error.BAD_DIGEST,
                    "the Content-MD5 you specified did not match what we received");
        }
        for (String algorithm : List.of("crc32", "crc32c", "crc64nvme", "sha1", "sha256")) {
            String given = exchange.header("x-amz-checksum-" + algorithm);
            if (given != null) {
                body = new DigestCheckingStream(body, Checksums.forHeader(algorithm), given.strip(), false, S3Error.BAD_DIGEST,
                        "the x-amz-checksum-" + algorithm + " you specified did not match");
            }
        }
        return body;
    }

    void putObject(S3Exchange exchange, InputStream body, String bucket, String key) {
        long length = contentLength(exchange);
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
        ObjectRecord template = recordFrom(exchange);
        CannedAcl acl = CannedAcl.of(exchange);
        InputStream checked = checkedBody(exchange, body);
        Attributes directory = namespace.objectDirectory(bucket, key);
        int mode = CannedAcl.fileMode(acl, directory);
        S3Namespace.Replacing replacing = writeCondition(exchange, bucket, key);
        String etag;
        if (length >= 0 && directory.layout() != null && length <= directory.layout().mdtBytes()) {
            // fits in the Data-on-MDT part: the whole object is one metadata change
            byte[] bytes = ObjectIo.readBody(checked, (int) length);
            etag = namespace.writeWholeObject(directory, Names.lastName(path), mode, template, replacing, bytes,
                    HexFormat.of().formatHex(S3Namespace.md5().digest(bytes))).etag();
        } else {
            etag = namespace.writeObject(directory, Names.lastName(path), mode, template, replacing,
                    file -> HexFormat.of().formatHex(ObjectIo.writeBody(checked, file, length, Layout.FILE_SIZE_MAX).md5())).etag();
        }
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("ETag", "\"" + etag + "\"");
        exchange.respond(200, headers, null);
    }

    /**
     * What a write's If-Match and If-None-Match allow it to replace. If-Match is checked against
     * the object now, and the write then replaces only that file (a write racing in between makes
     * it fail with 412 rather than be overwritten); If-None-Match takes only "*", as in S3.
     */
    private S3Namespace.Replacing writeCondition(S3Exchange exchange, String bucket, String key) {
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
        requireReadable(found.attributes());
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
        S3Namespace.Found kept = exchange.takeLookup();
        S3Namespace.Found found = kept != null ? kept : namespace.object(bucket, key, withBody ? Layout.MDT_BYTES_MAX : 0);
        Attributes attributes = found.attributes();
        byte[] inlineObject = found.bytes();
        if (found.whole()) {
            // all of it on the MDT: bytes, attributes and record came in one query, from one snapshot (and only if readable)
            serveObject(exchange, attributes, found.record(), (offset, length) -> Unpooled.wrappedBuffer(inlineObject, (int) offset, length), true);
            return;
        }
        if (attributes.isDirectory() || !withBody) {
            // HEAD needs no open file: it answers from one consistent stat, to callers who may read the object
            requireReadable(attributes);
            serveObject(exchange, attributes, found.record(), null, withBody);
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
                ByteBuf whole = readSmall(found);
                try {
                    serveObject(exchange, attributes, found.record(), (offset, length) -> whole.retainedSlice((int) offset, length), true);
                } finally {
                    whole.release();
                }
                return;
            }
            requireReadable(attributes); // its headers come from the lookup
            try (LargeObject bytes = new LargeObject(found)) {
                serveObject(exchange, attributes, found.record(), bytes, true);
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

    /**
     * The file a lookup found, as this request's caller's handle that reads it without an open
     * ({@link PlinthClient#openLookedUp}).
     */
    private PlinthFile openLookedUp(S3Namespace.Found found) {
        return client().openLookedUp(found.attributes(), found.bytes(), found.lookupSentNanos());
    }

    /** An object's headers (its ETag, a 304) go only to callers who may read it, as its bytes do. */
    private void requireReadable(Attributes attributes) {
        if (!attributes.isDirectory() && !dev.plinth.common.Permissions.allowed(client().caller(), attributes.mode(), attributes.uid(),
                attributes.gid(), false, dev.plinth.common.Permissions.READ)) {
            throw new S3Exception(S3Error.ACCESS_DENIED, "permission denied");
        }
    }

    /**
     * A large object's bytes, read from the file its lookup found without opening it
     * ({@link PlinthClient#openLookedUp}): an open and a close were two metadata changes (Raft
     * entries) per GET, the only ones, and a quarter of a 4 MiB GET's time. A GET still reading
     * seconds after its lookup opens the file then; if the object was removed meanwhile, it fails
     * mid-answer and the connection is cut (the client sees a short body). The file is made a
     * handle only once the answer is known to carry bytes, and its read-ahead stays within the
     * answer's range ({@link PlinthFile#adviseSequential}).
     */
    private final class LargeObject implements ObjectBytes, AutoCloseable {
        private final S3Namespace.Found found;
        private PlinthFile file;

        LargeObject(S3Namespace.Found found) {
            this.found = found;
        }

        @Override
        public void prepare(long offset, long length) {
            file = openLookedUp(found);
            file.adviseSequential(offset, length);
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
    private ByteBuf readSmall(S3Namespace.Found found) {
        int size = (int) found.attributes().sizeBytes();
        ByteBuf whole = PooledByteBufAllocator.DEFAULT.directBuffer(Math.max(size, 1));
        boolean kept = false;
        try {
            if (size > 0) {
                try (PlinthFile file = openLookedUp(found)) {
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

    /** Answers a GET or HEAD of an object (and its S3 record) whose bytes come from {@code bytes} (null for a directory key or a HEAD). */
    private void serveObject(S3Exchange exchange, Attributes attributes, ObjectRecord record, ObjectBytes bytes, boolean withBody) {
        long size = attributes.isDirectory() ? 0 : attributes.sizeBytes();
        String etag = attributes.isDirectory() ? "d41d8cd98f00b204e9800998ecf8427e" : S3Namespace.etag(attributes, record);
        long modifiedMillis = attributes.mtimeNanos() / 1_000_000;
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("ETag", "\"" + etag + "\"");
        headers.set("Last-Modified", Http.date(modifiedMillis));
        headers.set("Accept-Ranges", "bytes");
        headers.set("Content-Type", record == null || record.contentType() == null ? "binary/octet-stream" : record.contentType());
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
        if (number < 1 || number > PARTS_MAX) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "partNumber must be 1.." + PARTS_MAX);
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
        Element root = Xml.parse(body);
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
        try (PlinthFile from = namespace.openObject(source.bucket(), source.key())) {
            Attributes sourceAttributes = from.attributes();
            ObjectRecord sourceRecord = namespace.record(sourceAttributes.inodeId());
            String sourceEtag = S3Namespace.etag(sourceAttributes, sourceRecord);
            if (Conditions.checkCopySource(exchange, sourceEtag, sourceAttributes.mtimeNanos() / 1_000_000)) {
                throw new S3Exception(S3Error.PRECONDITION_FAILED, "at least one of the copy source preconditions did not hold");
            }
            // a copy is one piece, whatever the source was: the source's upload and parts are not the copy's
            ObjectRecord template = replace || sourceRecord == null ? recordFrom(exchange) : sourceRecord.withParts(null, List.of());
            CannedAcl acl = CannedAcl.of(exchange);
            Attributes directory = namespace.objectDirectory(bucket, key);
            S3Namespace.Written written = namespace.writeObject(directory, Names.lastName(path), CannedAcl.fileMode(acl, directory), template,
                    S3Namespace.Replacing.ANYTHING,
                    target -> copyRange(from, 0, sourceAttributes.sizeBytes(), target));
            exchange.respondXml(200, Xml.document("CopyObjectResult")
                    .element("LastModified", Http.isoDate(written.attributes().mtimeNanos() / 1_000_000))
                    .element("ETag", "\"" + written.etag() + "\"").end("CopyObjectResult"));
        } catch (PlinthException e) {
            throw S3Namespace.translate(e);
        }
    }

    /** Copies bytes [start, end) of {@code from} to the start of {@code target}; returns their MD5 in hex. */
    private static String copyRange(PlinthFile from, long start, long end, PlinthFile target) {
        java.security.MessageDigest md5 = S3Namespace.md5();
        ObjectIo.copy(from, start, end - start, target, 0, md5);
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

    // ---- multipart uploads

    private String uploadPath(String bucket, String uploadId) {
        if (uploadId == null || !UPLOAD_ID.matcher(uploadId).matches()) {
            throw new S3Exception(S3Error.NO_SUCH_UPLOAD, "the upload id is not valid");
        }
        return namespace.uploadsPath(bucket) + "/" + uploadId;
    }

    /**
     * An upload in progress: its target key, the record and mode the object will get
     * ({@code objectMode} -1: from its directory at completion, as a PUT without an ACL), and who
     * started it.
     */
    record UploadRecord(String key, long initiatedMillis, ObjectRecord template, int ownerUid, int objectMode) {
        static final String XATTR = "trusted.plinth.s3.upload";
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
        String uploadId = UUID.randomUUID().toString();
        UploadRecord record = new UploadRecord(key, System.currentTimeMillis(), recordFrom(exchange), client().caller().uid(),
                acl == null ? -1 : acl.fileMode());
        try {
            namespace.mkdirOwnedByCaller(uploads + "/" + uploadId, 0700, List.of(new dev.plinth.wire.messages.MetaMessages.Xattr(
                    UploadRecord.XATTR, dev.plinth.common.codec.RecordCodec.encode(record))));
        } catch (PlinthException e) {
            throw S3Namespace.translate(e);
        }
        exchange.respondXml(200, Xml.document("InitiateMultipartUploadResult").element("Bucket", bucket).element("Key", key)
                .element("UploadId", uploadId).end("InitiateMultipartUploadResult"));
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
        if (exchange.header("x-amz-copy-source") != null) {
            S3Namespace.Written written = uploadPartCopy(exchange, upload.directory(), number);
            exchange.respondXml(200, Xml.document("CopyPartResult")
                    .element("LastModified", Http.isoDate(written.attributes().mtimeNanos() / 1_000_000))
                    .element("ETag", "\"" + written.etag() + "\"").end("CopyPartResult"));
            return;
        }
        long length = contentLength(exchange);
        if (length < 0) {
            throw new S3Exception(S3Error.MISSING_CONTENT_LENGTH, "UploadPart needs a Content-Length");
        }
        InputStream checked = checkedBody(exchange, body);
        String etag = namespace.writeObject(upload.directory(), partName(number), 0600, PART_TEMPLATE, S3Namespace.Replacing.ANYTHING,
                file -> HexFormat.of().formatHex(ObjectIo.writeBody(checked, file, length, Layout.FILE_SIZE_MAX).md5())).etag();
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("ETag", "\"" + etag + "\"");
        exchange.respond(200, headers, null);
    }

    private S3Namespace.Written uploadPartCopy(S3Exchange exchange, Attributes directory, int number) {
        CopySource source = CopySource.parse(exchange.header("x-amz-copy-source"));
        try (PlinthFile from = namespace.openObject(source.bucket(), source.key())) {
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
            return namespace.writeObject(directory, partName(number), 0600, PART_TEMPLATE, S3Namespace.Replacing.ANYTHING,
                    target -> copyRange(from, first, last, target));
        } catch (PlinthException e) {
            throw S3Namespace.translate(e);
        }
    }

    /** A stored part: number, attributes, ETag. */
    private record Part(int number, Attributes attributes, String etag) {}

    private List<Part> parts(String directory) {
        List<Part> parts = new ArrayList<>();
        for (PlinthClient.Listed listed : client().listWithAttributes(directory)) {
            String name = listed.entry().name();
            if (name.startsWith("part-") && listed.attributes().type() == dev.plinth.common.FileType.FILE) {
                Attributes attributes = listed.attributes();
                parts.add(new Part(Integer.parseInt(name.substring(5)), attributes, S3Namespace.etag(attributes, namespace.record(attributes.inodeId()))));
            }
        }
        return parts;
    }

    void listParts(S3Exchange exchange, String bucket, String key) {
        namespace.bucket(bucket);
        String uploadId = exchange.parameter("uploadId");
        upload(bucket, uploadId);
        int marker = exchange.parameter("part-number-marker") == null ? 0 : boundedCount(exchange.parameter("part-number-marker"), "part-number-marker");
        int maxParts = boundedCount(exchange.parameter("max-parts"), "max-parts");
        List<Part> parts = parts(uploadPath(bucket, uploadId)).stream().filter(p -> p.number() > marker).toList();
        boolean truncated = parts.size() > maxParts;
        parts = parts.subList(0, Math.min(parts.size(), maxParts));
        Xml xml = Xml.document("ListPartsResult").element("Bucket", bucket).element("Key", key).element("UploadId", uploadId)
                .element("PartNumberMarker", marker).element("MaxParts", maxParts).element("IsTruncated", truncated);
        if (truncated) {
            xml.element("NextPartNumberMarker", parts.getLast().number());
        }
        for (Part part : parts) {
            xml.open("Part").element("PartNumber", part.number()).element("LastModified", Http.isoDate(part.attributes().mtimeNanos() / 1_000_000))
                    .element("ETag", "\"" + part.etag() + "\"").element("Size", part.attributes().sizeBytes()).close("Part");
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
        String prefix = orEmpty(exchange.parameter("prefix"));
        String keyMarker = orEmpty(exchange.parameter("key-marker"));
        String uploadIdMarker = orEmpty(exchange.parameter("upload-id-marker"));
        int maxUploads = boundedCount(exchange.parameter("max-uploads"), "max-uploads");
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

    private static String completeResult(String bucket, String key, String etag) {
        return Xml.document("CompleteMultipartUploadResult").element("Location", "/" + bucket + "/" + key).element("Bucket", bucket)
                .element("Key", key).element("ETag", "\"" + etag + "\"").end("CompleteMultipartUploadResult");
    }

    /** A max-keys style parameter: absent means 1000, larger values mean 1000, negatives and non-numbers are refused. */
    private static int boundedCount(String value, String name) {
        if (value == null) {
            return 1000;
        }
        try {
            int count = Integer.parseInt(value.strip());
            if (count < 0) {
                throw new NumberFormatException();
            }
            return Math.min(1000, count);
        } catch (NumberFormatException e) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, name + " must be a number from 0 to 1000");
        }
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
            requireReadable(completed.attributes());
            exchange.respondXml(200, completeResult(bucket, key, S3Namespace.etag(completed.attributes(), completed.record())));
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
        String path = namespace.objectPath(bucket, key);
        namespace.requireWritable(bucket, key);
        S3Namespace.Replacing replacing = writeCondition(exchange, bucket, key);
        Attributes target = namespace.objectDirectory(bucket, key);
        int mode = upload.record().objectMode() >= 0 ? upload.record().objectMode() : CannedAcl.fileMode(null, target);
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("Content-Type", "application/xml");
        exchange.startStream(200, headers, -1);
        exchange.streamChunk(io.netty.buffer.Unpooled.copiedBuffer(Xml.HEADER, StandardCharsets.UTF_8));
        String result;
        try {
            ObjectRecord template = upload.record().template().withParts(exchange.parameter("uploadId"),
                    chosen.stream().map(part -> part.attributes().sizeBytes()).toList());
            S3Namespace.Written written = namespace.writeObject(target, Names.lastName(path), mode, template, replacing, file -> {
                java.security.MessageDigest etags = S3Namespace.md5();
                long offset = 0;
                long lastKeepAlive = System.nanoTime();
                for (Part part : chosen) {
                    etags.update(HexFormat.of().parseHex(part.etag()));
                    try (PlinthFile from = client().open(part.attributes().inodeId(), false)) {
                        ObjectIo.copy(from, 0, part.attributes().sizeBytes(), file, offset, null);
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
            result = completeResult(bucket, key, written.etag()).substring(Xml.HEADER.length());
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
