package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.NonBlocking;
import dev.plinth.common.PlinthException;
import java.io.InputStream;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Picks the operation of a request from its method, bucket, key and sub-resource, after
 * authenticating it, and runs it as the key's uid/gid. Path-style addressing always
 * ({@code /bucket/key}); virtual-host style ({@code bucket.DOMAIN/key}) when a domain is set.
 */
final class S3Router {
    private static final Logger LOG = LoggerFactory.getLogger(S3Router.class);
    private static final java.util.regex.Pattern PORT_SUFFIX = java.util.regex.Pattern.compile(":\\d+$");
    /**
     * The query parameters that name a sub-resource in S3's API: each selects an operation other
     * than the plain one for its method. One the gateway does not implement for a method answers
     * NotImplemented; it must never fall through to the plain operation (PUT ?versioning is not a
     * CreateBucket).
     */
    private static final Set<String> SUB_RESOURCES = Set.of("acl", "accelerate", "analytics", "attributes", "cors", "delete",
            "encryption", "intelligent-tiering", "inventory", "legal-hold", "lifecycle", "location", "logging", "metadataConfiguration",
            "metadataTable", "metrics", "notification", "object-lock", "ownershipControls", "policy", "policyStatus",
            "publicAccessBlock", "renameObject", "replication", "requestPayment", "restore", "retention", "select", "session",
            "tagging", "torrent", "uploadId", "uploads", "versioning", "versions", "website");

    /** What an operation runs, given the request, its body, the bucket and the key (either may be null for its scope). */
    private interface Handler {
        void run(S3Exchange exchange, InputStream body, String bucket, String key);
    }

    /** An operation: its S3 name, and whether it may be answered on an event loop (one record, no listing, no change). */
    private record Route(String operation, boolean oneRecord, Handler handler) {}

    /** Routes by "SCOPE METHOD SUB-RESOURCE", SCOPE being service, bucket or object, SUB-RESOURCE empty for the plain operation. */
    private final Map<String, Route> routes = new HashMap<>();

    private final Authenticator authenticator;
    private final BucketOperations buckets;
    private final AclOperations acls;
    private final ListingOperations listings;
    private final ObjectOperations objects;
    private final TaggingOperations tagging;
    private final MultipartOperations uploads;
    private final PlinthClient client;
    private final String domain;

    S3Router(Authenticator authenticator, S3Namespace namespace, String region, PlinthClient client, String domain) {
        this.authenticator = authenticator;
        this.buckets = new BucketOperations(namespace, region);
        this.acls = new AclOperations(namespace);
        this.listings = new ListingOperations(namespace);
        this.tagging = new TaggingOperations(namespace);
        this.objects = new ObjectOperations(namespace, tagging);
        this.uploads = new MultipartOperations(namespace, objects);
        this.client = client;
        this.domain = domain == null || domain.isEmpty() ? null : domain.toLowerCase(java.util.Locale.ROOT);
        route("service GET", "ListBuckets", false, (exchange, body, bucket, key) -> buckets.listBuckets(exchange));
        route("bucket GET", "ListObjects", false, (exchange, body, bucket, key) -> {
            boolean version2 = "2".equals(exchange.parameter("list-type"));
            exchange.operation(version2 ? "ListObjectsV2" : "ListObjects");
            listings.listObjects(exchange, bucket, version2);
        });
        route("bucket GET location", "GetBucketLocation", false, (exchange, body, bucket, key) -> buckets.bucketLocation(exchange, bucket));
        route("bucket GET versioning", "GetBucketVersioning", false, (exchange, body, bucket, key) -> buckets.bucketVersioning(exchange, bucket));
        route("bucket GET uploads", "ListMultipartUploads", false, (exchange, body, bucket, key) -> uploads.listMultipartUploads(exchange, bucket));
        route("bucket GET acl", "GetBucketAcl", false, (exchange, body, bucket, key) -> acls.getBucketAcl(exchange, bucket));
        route("bucket PUT acl", "PutBucketAcl", false, (exchange, body, bucket, key) -> acls.putBucketAcl(exchange, body, bucket));
        route("bucket GET tagging", "GetBucketTagging", false, (exchange, body, bucket, key) -> tagging.getBucketTagging(exchange, bucket));
        route("bucket PUT tagging", "PutBucketTagging", false, (exchange, body, bucket, key) -> tagging.putBucketTagging(exchange, body, bucket));
        route("bucket DELETE tagging", "DeleteBucketTagging", false, (exchange, body, bucket, key) -> tagging.deleteBucketTagging(exchange, bucket));
        route("bucket HEAD", "HeadBucket", true, (exchange, body, bucket, key) -> buckets.headBucket(exchange, bucket));
        route("bucket PUT", "CreateBucket", false, (exchange, body, bucket, key) -> buckets.createBucket(exchange, body, bucket));
        route("bucket DELETE", "DeleteBucket", false, (exchange, body, bucket, key) -> buckets.deleteBucket(exchange, bucket));
        route("bucket POST delete", "DeleteObjects", false, (exchange, body, bucket, key) -> objects.deleteObjects(exchange, body, bucket));
        route("object GET", "GetObject", true, (exchange, body, bucket, key) -> objects.getObject(exchange, bucket, key, true));
        route("object HEAD", "HeadObject", true, (exchange, body, bucket, key) -> objects.headObject(exchange, bucket, key));
        route("object GET uploadId", "ListParts", false, (exchange, body, bucket, key) -> uploads.listParts(exchange, bucket, key));
        route("object GET acl", "GetObjectAcl", false, (exchange, body, bucket, key) -> acls.getObjectAcl(exchange, bucket, key));
        route("object GET tagging", "GetObjectTagging", false, (exchange, body, bucket, key) -> tagging.getObjectTagging(exchange, bucket, key));
        route("object PUT tagging", "PutObjectTagging", false,
                (exchange, body, bucket, key) -> tagging.putObjectTagging(exchange, body, bucket, key));
        route("object DELETE tagging", "DeleteObjectTagging", false,
                (exchange, body, bucket, key) -> tagging.deleteObjectTagging(exchange, bucket, key));
        route("object GET attributes", "GetObjectAttributes", false,
                (exchange, body, bucket, key) -> objects.getObjectAttributes(exchange, bucket, key));
        route("object PUT acl", "PutObjectAcl", false, (exchange, body, bucket, key) -> acls.putObjectAcl(exchange, body, bucket, key));
        route("object PUT", "PutObject", false, (exchange, body, bucket, key) -> {
            if (exchange.header("x-amz-copy-source") != null) {
                exchange.operation("CopyObject");
                objects.copyObject(exchange, body, bucket, key);
            } else {
                objects.putObject(exchange, body, bucket, key);
            }
        });
        route("object PUT uploadId", "UploadPart", false, (exchange, body, bucket, key) -> uploads.uploadPart(exchange, body, bucket, key));
        route("object DELETE", "DeleteObject", false, (exchange, body, bucket, key) -> objects.deleteObject(exchange, bucket, key));
        route("object DELETE uploadId", "AbortMultipartUpload", false, (exchange, body, bucket, key) -> uploads.abortMultipartUpload(exchange, bucket, key));
        route("object POST uploads", "CreateMultipartUpload", false,
                (exchange, body, bucket, key) -> uploads.createMultipartUpload(exchange, bucket, key));
        route("object POST uploadId", "CompleteMultipartUpload", false,
                (exchange, body, bucket, key) -> uploads.completeMultipartUpload(exchange, body, bucket, key));
    }

    private void route(String selector, String operation, boolean oneRecord, Handler handler) {
        routes.put(selector, new Route(operation, oneRecord, handler));
    }

    void handle(S3Exchange exchange) {
        try {
            if (exchange.encodingProblem() != null) {
                throw new S3Exception(S3Error.INVALID_ARGUMENT, exchange.encodingProblem());
            }
            Authenticator.Authenticated caller = authenticator.authenticate(exchange);
            ScopedValue.where(PlinthClient.CALLER, caller.credentials()).run(() -> route(exchange, caller.body()));
        } catch (S3Exception e) {
            LOG.debug("{} {} {}: {} {}", exchange.requestId(), exchange.method(), exchange.path(), e.error().code(), e.getMessage());
            exchange.respondError(e);
        } catch (PlinthException e) {
            exchange.respondError(S3Namespace.translate(e));
        } catch (RuntimeException e) {
            LOG.warn("{} {} {} failed", exchange.requestId(), exchange.method(), exchange.path(), e);
            exchange.respondError(new S3Exception(S3Error.INTERNAL_ERROR, "internal error: " + e));
        }
    }

    /**
     * Answers a request on this thread, a network event loop, if nothing it needs would make it
     * wait (everything in memory: the access key, the object's records and bytes in the metadata
     * cache; design note 71). Returns false if something would have waited: nothing was answered
     * ({@link S3Exchange} answers nothing after a refused wait, whatever a layer made of the
     * refusal), and the request is to run again on a thread that may wait.
     */
    boolean answerWithoutWaiting(S3Exchange exchange) {
        return NonBlocking.call(() -> {
            try {
                handle(exchange);
            } catch (PlinthException e) {
                if (!NonBlocking.refused()) {
                    throw e;
                }
            }
            return !NonBlocking.refused();
        });
    }

    private void route(S3Exchange exchange, InputStream body) {
        String bucket = null;
        String key = null;
        String path = exchange.path();
        String host = exchange.header("Host");
        if (domain != null && host != null) {
            String name = PORT_SUFFIX.matcher(host.toLowerCase(java.util.Locale.ROOT)).replaceFirst("");
            if (name.endsWith("." + domain)) {
                bucket = name.substring(0, name.length() - domain.length() - 1);
                key = path.length() > 1 ? path.substring(1) : null;
            }
        }
        if (bucket == null && path.length() > 1) {
            String rest = path.substring(1);
            int slash = rest.indexOf('/');
            bucket = slash < 0 ? rest : rest.substring(0, slash);
            key = slash < 0 || slash == rest.length() - 1 ? null : rest.substring(slash + 1);
        }
        String subResource = "";
        for (var parameter : exchange.query()) {
            String name = parameter.getKey();
            if (SUB_RESOURCES.contains(name) && !name.equals(subResource)) {
                if (!subResource.isEmpty()) {
                    throw new S3Exception(S3Error.INVALID_REQUEST, "a request names one sub-resource; this one names '" + subResource
                            + "' and '" + name + "'");
                }
                subResource = name;
            }
        }
        String method = exchange.method();
        String scope = bucket == null ? "service" : key == null ? "bucket" : "object";
        Route route = routes.get(scope + " " + method + (subResource.isEmpty() ? "" : " " + subResource));
        if (route == null) {
            if (!subResource.isEmpty()) {
                throw new S3Exception(S3Error.NOT_IMPLEMENTED, method + " of the '" + subResource + "' sub-resource of "
                        + (scope.equals("service") ? "the service" : "a " + scope) + " is not implemented");
            }
            throw new S3Exception(S3Error.METHOD_NOT_ALLOWED, method + " is not allowed on " + (scope.equals("service") ? "the service" : "a " + scope));
        }
        String versionId = exchange.parameter("versionId");
        if (versionId != null && !versionId.equals("null")) {
            // buckets are never versioned here: an object's only version is the null version
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "invalid version id specified (buckets are not versioned)");
        }
        if (!route.oneRecord()) {
            // on an event loop only an object's GET and HEADs: listings scan the store, changes go through the log
            NonBlocking.check(route.operation() + " reads more than one record");
        }
        exchange.operation(route.operation());
        route.handler().run(exchange, body, bucket, key);
    }
}
