package dev.plinth.gateway;

import dev.plinth.wire.messages.MetaMessages.Attributes;

/** ListObjects and ListObjectsV2, in S3 key order over a bucket's directory tree ({@link ObjectListing}). */
final class ListingOperations {
    private final S3Namespace namespace;
    private final ObjectListing listing;

    ListingOperations(S3Namespace namespace) {
        this.namespace = namespace;
        this.listing = new ObjectListing(namespace.client());
    }


    void listObjects(S3Exchange exchange, String bucket, boolean version2) {
        Attributes bucketAttributes = namespace.bucket(bucket);
        String prefix = S3Requests.orEmpty(exchange.parameter("prefix"));
        String delimiter = exchange.parameter("delimiter");
        boolean urlEncode = "url".equals(exchange.parameter("encoding-type"));
        int maxKeys = S3Requests.boundedCount(exchange.parameter("max-keys"), "max-keys");
        String after;
        String token = exchange.parameter("continuation-token");
        if (version2) {
            after = S3Requests.orEmpty(exchange.parameter("start-after"));
            if (token != null) {
                after = S3Requests.resumeAfter(token);
            }
        } else {
            after = S3Requests.orEmpty(exchange.parameter("marker"));
        }
        ObjectListing.Page page = listing.list(bucketAttributes.inodeId(), namespace.bucketPath(bucket), prefix,
                delimiter == null || delimiter.isEmpty() ? null : delimiter, after, maxKeys);
        String root = "ListBucketResult";
        // with encoding-type=url, version 1 encodes Delimiter, Marker, NextMarker and keys but echoes Prefix as given (clients
        // decode just those); version 2 encodes Prefix and StartAfter too
        Xml xml = Xml.document(root).element("Name", bucket).element("Prefix", version2 ? S3Requests.encode(prefix, urlEncode) : prefix);
        if (version2) {
            if (exchange.parameter("start-after") != null) {
                xml.element("StartAfter", S3Requests.encode(exchange.parameter("start-after"), urlEncode));
            }
            if (token != null) {
                xml.element("ContinuationToken", token);
            }
            xml.element("KeyCount", page.items().size());
        } else {
            xml.element("Marker", S3Requests.encode(after, urlEncode));
        }
        xml.element("MaxKeys", maxKeys);
        if (delimiter != null && !delimiter.isEmpty()) {
            xml.element("Delimiter", S3Requests.encode(delimiter, urlEncode));
        }
        if (urlEncode) {
            xml.element("EncodingType", "url");
        }
        xml.element("IsTruncated", page.truncated());
        if (page.truncated() && !page.items().isEmpty()) {
            String last = page.items().getLast().key();
            if (version2) {
                xml.element("NextContinuationToken", S3Requests.continuationToken(last));
            } else {
                xml.element("NextMarker", S3Requests.encode(last, urlEncode));
            }
        }
        boolean fetchOwner = !version2 || "true".equals(exchange.parameter("fetch-owner"));
        for (ObjectListing.Item item : page.items()) {
            if (item.commonPrefix()) {
                continue;
            }
            xml.open("Contents").element("Key", S3Requests.encode(item.key(), urlEncode));
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
                xml.open("CommonPrefixes").element("Prefix", S3Requests.encode(item.key(), urlEncode)).close("CommonPrefixes");
            }
        }
        exchange.respondXml(200, xml.end(root));
    }
}
