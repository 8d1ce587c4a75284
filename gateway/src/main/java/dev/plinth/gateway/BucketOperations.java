package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Permissions;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import io.netty.handler.codec.http.DefaultHttpHeaders;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Buckets: list, create (any key, owning what it makes), delete (its owner), head, location and
 * versioning. A bucket is a top-level directory ({@link S3Namespace}).
 */
final class BucketOperations {
    private final S3Namespace namespace;
    private final String region;

    BucketOperations(S3Namespace namespace, String region) {
        this.namespace = namespace;
        this.region = region;
    }

    private PlinthClient client() {
        return namespace.client();
    }

    /** Where a bucket keeps the LocationConstraint it was created with. */
    static final String LOCATION_XATTR = "trusted.plinth.s3.location";
    private static final int BUCKETS_PAGE_MAX = 10_000;
    private static final java.util.regex.Pattern REGION_NAME = java.util.regex.Pattern.compile("[a-z0-9-]{1,64}");

    /** The buckets the caller may list (read its directory), in name order; paged by max-buckets and continuation-token. */
    void listBuckets(S3Exchange exchange) {
        String prefix = S3Requests.orEmpty(exchange.parameter("prefix"));
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
            after = S3Requests.resumeAfter(token);
        }
        dev.plinth.common.Credentials caller = client().caller();
        List<PlinthClient.Listed> buckets = new ArrayList<>();
        for (PlinthClient.Listed listed : client().listWithAttributes(namespace.rootPath())) {
            Attributes attributes = listed.attributes();
            String name = listed.entry().name();
            if (attributes.isDirectory() && S3Namespace.validBucketName(name) && name.startsWith(prefix) && name.compareTo(after) > 0
                    && Permissions.allowed(caller, attributes.mode(), attributes.uid(), attributes.gid(), true,
                    Permissions.READ)) {
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
            xml.element("ContinuationToken", S3Requests.continuationToken(last));
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

    /** HeadBucket, GetBucketLocation and GetBucketVersioning need what ListObjects needs (S3's ListBucket): read access to the bucket. */
    void headBucket(S3Exchange exchange, String bucket) {
        namespace.bucket(bucket, Permissions.READ);
        DefaultHttpHeaders headers = new DefaultHttpHeaders();
        headers.set("x-amz-bucket-region", region);
        exchange.respond(200, headers, null);
    }

    /** The LocationConstraint the bucket was made with; else the gateway's region (empty for us-east-1, as S3 answers). */
    void bucketLocation(S3Exchange exchange, String bucket) {
        Attributes attributes = namespace.bucket(bucket, Permissions.READ);
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
        namespace.bucket(bucket, Permissions.READ);
        exchange.respondXml(200, Xml.document("VersioningConfiguration").end("VersioningConfiguration"));
    }
}
