package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.NonBlocking;
import dev.plinth.common.PlinthException;
import java.io.InputStream;
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
    /** Sub-resources S3 has that the gateway does not implement: answered NotImplemented, never mistaken for a plain GET. */
    private static final Set<String> UNSUPPORTED = Set.of("acl", "accelerate", "analytics", "cors", "encryption", "intelligent-tiering",
            "inventory", "legal-hold", "lifecycle", "logging", "metrics", "notification", "object-lock", "ownershipControls", "policy",
            "policyStatus", "publicAccessBlock", "replication", "requestPayment", "restore", "retention", "select", "tagging", "torrent",
            "website", "versions", "attributes");

    private final Authenticator authenticator;
    private final S3Operations operations;
    private final PlinthClient client;
    private final String domain;

    S3Router(Authenticator authenticator, S3Operations operations, PlinthClient client, String domain) {
        this.authenticator = authenticator;
        this.operations = operations;
        this.client = client;
        this.domain = domain == null || domain.isEmpty() ? null : domain.toLowerCase(java.util.Locale.ROOT);
    }

    void handle(S3Exchange exchange) {
        try {
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
        for (var parameter : exchange.query()) {
            if (UNSUPPORTED.contains(parameter.getKey())) {
                throw new S3Exception(S3Error.NOT_IMPLEMENTED, "the '" + parameter.getKey() + "' sub-resource is not implemented");
            }
        }
        String method = exchange.method();
        if (!method.equals("HEAD") && (!method.equals("GET") || key == null || exchange.hasParameter("uploadId"))) {
            // on an event loop only an object's GET and HEADs: listings scan the store, so they go to a thread at once
            NonBlocking.check(method + " of more than one record");
        }
        if (bucket == null) {
            if (method.equals("GET")) {
                exchange.operation("ListBuckets");
                operations.listBuckets(exchange);
                return;
            }
            throw new S3Exception(S3Error.METHOD_NOT_ALLOWED, method + " is not allowed on the service");
        }
        if (key == null) {
            switch (method) {
                case "GET" -> {
                    if (exchange.hasParameter("location")) {
                        exchange.operation("GetBucketLocation");
                        operations.bucketLocation(exchange, bucket);
                    } else if (exchange.hasParameter("versioning")) {
                        exchange.operation("GetBucketVersioning");
                        operations.bucketVersioning(exchange, bucket);
                    } else if (exchange.hasParameter("uploads")) {
                        exchange.operation("ListMultipartUploads");
                        operations.listMultipartUploads(exchange, bucket);
                    } else {
                        exchange.operation("2".equals(exchange.parameter("list-type")) ? "ListObjectsV2" : "ListObjects");
                        operations.listObjects(exchange, bucket, "2".equals(exchange.parameter("list-type")));
                    }
                }
                case "HEAD" -> {
                    exchange.operation("HeadBucket");
                    operations.headBucket(exchange, bucket);
                }
                case "PUT" -> {
                    exchange.operation("CreateBucket");
                    operations.createBucket(exchange, body, bucket);
                }
                case "DELETE" -> {
                    exchange.operation("DeleteBucket");
                    operations.deleteBucket(exchange, bucket);
                }
                case "POST" -> {
                    if (!exchange.hasParameter("delete")) {
                        throw new S3Exception(S3Error.NOT_IMPLEMENTED, "POST on a bucket is only DeleteObjects (?delete)");
                    }
                    exchange.operation("DeleteObjects");
                    operations.deleteObjects(exchange, body, bucket);
                }
                default -> throw new S3Exception(S3Error.METHOD_NOT_ALLOWED, method + " is not allowed on a bucket");
            }
            return;
        }
        switch (method) {
            case "GET" -> {
                if (exchange.hasParameter("uploadId")) {
                    exchange.operation("ListParts");
                    operations.listParts(exchange, bucket, key);
                } else {
                    exchange.operation("GetObject");
                    operations.getObject(exchange, bucket, key, true);
                }
            }
            case "HEAD" -> {
                exchange.operation("HeadObject");
                operations.headObject(exchange, bucket, key);
            }
            case "PUT" -> {
                if (exchange.hasParameter("uploadId") || exchange.hasParameter("partNumber")) {
                    exchange.operation("UploadPart");
                    operations.uploadPart(exchange, body, bucket, key);
                } else if (exchange.header("x-amz-copy-source") != null) {
                    exchange.operation("CopyObject");
                    operations.copyObject(exchange, body, bucket, key);
                } else {
                    exchange.operation("PutObject");
                    operations.putObject(exchange, body, bucket, key);
                }
            }
            case "DELETE" -> {
                if (exchange.hasParameter("uploadId")) {
                    exchange.operation("AbortMultipartUpload");
                    operations.abortMultipartUpload(exchange, bucket);
                } else {
                    exchange.operation("DeleteObject");
                    operations.deleteObject(exchange, bucket, key);
                }
            }
            case "POST" -> {
                if (exchange.hasParameter("uploads")) {
                    exchange.operation("CreateMultipartUpload");
                    operations.createMultipartUpload(exchange, bucket, key);
                } else if (exchange.hasParameter("uploadId")) {
                    exchange.operation("CompleteMultipartUpload");
                    operations.completeMultipartUpload(exchange, body, bucket, key);
                } else {
                    throw new S3Exception(S3Error.NOT_IMPLEMENTED, "POST on an object is only for multipart uploads");
                }
            }
            default -> throw new S3Exception(S3Error.METHOD_NOT_ALLOWED, method + " is not allowed on an object");
        }
    }
}
