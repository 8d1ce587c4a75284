package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.io.InputStream;

/** GetBucketAcl, PutBucketAcl, GetObjectAcl, PutObjectAcl: canned ACLs as modes ({@link CannedAcl}). */
final class AclOperations {
    private final S3Namespace namespace;

    AclOperations(S3Namespace namespace) {
        this.namespace = namespace;
    }

    private PlinthClient client() {
        return namespace.client();
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
}
