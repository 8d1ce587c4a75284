package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.io.InputStream;

/**
 * Object and bucket tagging: Get/Put/DeleteObjectTagging and Get/Put/DeleteBucketTagging. Tags
 * live in an extended attribute ({@link ObjectTags}), so the file's permissions decide as they do
 * for any user.* attribute: reading an object's tags needs read permission, changing them write
 * permission; a bucket's are its owner's, as its ACL is.
 */
final class TaggingOperations {
    private final S3Namespace namespace;

    TaggingOperations(S3Namespace namespace) {
        this.namespace = namespace;
    }

    private PlinthClient client() {
        return namespace.client();
    }

    void getObjectTagging(S3Exchange exchange, String bucket, String key) {
        Attributes attributes = namespace.object(bucket, key).attributes();
        S3Requests.requireReadable(client(), attributes);
        exchange.respondXml(200, tags(attributes.inodeId()).toXml());
    }

    void putObjectTagging(S3Exchange exchange, InputStream body, String bucket, String key) {
        Attributes attributes = namespace.object(bucket, key).attributes();
        ObjectTags tags = ObjectTags.fromXml(Xml.parse(S3Requests.checkedBody(exchange, body)), ObjectTags.OBJECT_TAGS_MAX);
        store(attributes.inodeId(), tags);
        exchange.respond(200, null, null);
    }

    void deleteObjectTagging(S3Exchange exchange, String bucket, String key) {
        store(namespace.object(bucket, key).attributes().inodeId(), ObjectTags.NONE);
        exchange.respond(204, null, null);
    }

    void getBucketTagging(S3Exchange exchange, String bucket) {
        Attributes attributes = ownedBucket(bucket);
        ObjectTags tags = tags(attributes.inodeId());
        if (tags.isEmpty()) {
            throw new S3Exception(S3Error.NO_SUCH_TAG_SET, "The TagSet does not exist");
        }
        exchange.respondXml(200, tags.toXml());
    }

    void putBucketTagging(S3Exchange exchange, InputStream body, String bucket) {
        Attributes attributes = ownedBucket(bucket);
        store(attributes.inodeId(), ObjectTags.fromXml(Xml.parse(S3Requests.checkedBody(exchange, body)), ObjectTags.BUCKET_TAGS_MAX));
        exchange.respond(204, null, null);
    }

    void deleteBucketTagging(S3Exchange exchange, String bucket) {
        store(ownedBucket(bucket).inodeId(), ObjectTags.NONE);
        exchange.respond(204, null, null);
    }

    /** A bucket whose tags the caller may read and change: its owner's (or root's), as its ACL is. */
    private Attributes ownedBucket(String bucket) {
        Attributes attributes = namespace.bucket(bucket);
        if (!client().caller().isRoot() && attributes.uid() != client().caller().uid()) {
            throw new S3Exception(S3Error.ACCESS_DENIED, "only the bucket's owner reads or changes its tags");
        }
        return attributes;
    }

    /** A file's tags as the caller may read them (none if it has none). */
    ObjectTags tags(long inodeId) {
        try {
            return ObjectTags.fromXattr(client().getXattr(inodeId, ObjectTags.XATTR));
        } catch (PlinthException e) {
            if (e.code() == ErrorCode.NO_ATTRIBUTE) {
                return ObjectTags.NONE;
            }
            throw S3Namespace.translate(e);
        }
    }

    /** Replaces the tags of a file as the caller (who needs write permission on it); no tags removes the attribute. */
    private void store(long inodeId, ObjectTags tags) {
        try {
            if (tags.isEmpty()) {
                client().removeXattr(inodeId, ObjectTags.XATTR);
            } else {
                var xattr = tags.xattr();
                client().setXattr(inodeId, xattr.name(), xattr.value(), 0);
            }
        } catch (PlinthException e) {
            if (e.code() != ErrorCode.NO_ATTRIBUTE) {
                throw S3Namespace.translate(e);
            }
        }
    }
}
