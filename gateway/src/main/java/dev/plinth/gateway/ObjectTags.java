package dev.plinth.gateway;

import dev.plinth.wire.messages.MetaMessages;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.w3c.dom.Element;

/**
 * An object's or a bucket's tags: up to 10 (50 for a bucket) key-value pairs, keys unique. Kept
 * in the {@value #XATTR} extended attribute of the object's file (the bucket's directory) in the
 * form x-amz-tagging takes ({@code key=value&key2=value2}, URL-encoded), so they are read and
 * changed through the mount too ({@code getfattr -n user.plinth.s3.tags}), with the file's
 * permissions deciding who may.
 */
record ObjectTags(List<Tag> tags) {
    static final String XATTR = "user.plinth.s3.tags";
    static final int OBJECT_TAGS_MAX = 10;
    static final int BUCKET_TAGS_MAX = 50;
    private static final int KEY_CHARS_MAX = 128;
    private static final int VALUE_CHARS_MAX = 256;

    record Tag(String key, String value) {}

    static final ObjectTags NONE = new ObjectTags(List.of());

    ObjectTags {
        tags = List.copyOf(tags);
    }

    boolean isEmpty() {
        return tags.isEmpty();
    }

    /** The tags of an x-amz-tagging header (null: none given), checked as for an object. */
    static ObjectTags fromHeader(String header) {
        if (header == null) {
            return null;
        }
        return fromQueryForm(header, S3Error.INVALID_ARGUMENT).checked(OBJECT_TAGS_MAX);
    }

    /** The tags of a stored attribute value (null: no tags); a value changed through the mount that does not parse counts as none. */
    static ObjectTags fromXattr(byte[] value) {
        if (value == null) {
            return NONE;
        }
        try {
            return fromQueryForm(new String(value, StandardCharsets.UTF_8), S3Error.INVALID_TAG);
        } catch (S3Exception e) {
            return NONE;
        }
    }

    private static ObjectTags fromQueryForm(String text, S3Error error) {
        List<Tag> tags = new ArrayList<>();
        if (text.isEmpty()) {
            return NONE;
        }
        for (String pair : text.split("&", -1)) {
            int equals = pair.indexOf('=');
            String key = equals < 0 ? pair : pair.substring(0, equals);
            String value = equals < 0 ? "" : pair.substring(equals + 1);
            try {
                tags.add(new Tag(Http.decodeStrict(key, true), Http.decodeStrict(value, true)));
            } catch (Http.BadEncodingException e) {
                throw new S3Exception(error, "the tagging is not URL-encoded key=value pairs: " + e.getMessage());
            }
        }
        return new ObjectTags(tags);
    }

    /** The tags of a PutObjectTagging or PutBucketTagging body ({@code <Tagging><TagSet><Tag>...}), checked. */
    static ObjectTags fromXml(Element root, int tagsMax) {
        if (!"Tagging".equals(root.getLocalName())) {
            throw new S3Exception(S3Error.MALFORMED_XML, "the body must be a <Tagging> document");
        }
        List<Element> sets = Xml.children(root, "TagSet");
        if (sets.size() != 1) {
            throw new S3Exception(S3Error.MALFORMED_XML, "a <Tagging> document has one <TagSet>");
        }
        List<Tag> tags = new ArrayList<>();
        for (Element tag : Xml.children(sets.getFirst(), "Tag")) {
            String key = Xml.childTextExact(tag, "Key");
            String value = Xml.childTextExact(tag, "Value");
            if (key == null || value == null) {
                throw new S3Exception(S3Error.MALFORMED_XML, "a <Tag> has a <Key> and a <Value>");
            }
            tags.add(new Tag(key, value));
        }
        return new ObjectTags(tags).checked(tagsMax);
    }

    /** These tags if S3 would take them: at most {@code tagsMax}, keys unique, 1-128 characters, not aws:, values up to 256. */
    ObjectTags checked(int tagsMax) {
        if (tags.size() > tagsMax) {
            throw new S3Exception(S3Error.INVALID_TAG, "Object tags cannot be greater than " + tagsMax);
        }
        Set<String> keys = new HashSet<>();
        for (Tag tag : tags) {
            int keyChars = tag.key().codePointCount(0, tag.key().length());
            if (keyChars == 0 || keyChars > KEY_CHARS_MAX) {
                throw new S3Exception(S3Error.INVALID_TAG, "The TagKey you have provided is invalid");
            }
            if (tag.value().codePointCount(0, tag.value().length()) > VALUE_CHARS_MAX) {
                throw new S3Exception(S3Error.INVALID_TAG, "The TagValue you have provided is invalid");
            }
            if (tag.key().startsWith("aws:")) {
                throw new S3Exception(S3Error.INVALID_TAG, "Your TagKey cannot be prefixed with aws:");
            }
            if (!keys.add(tag.key())) {
                throw new S3Exception(S3Error.INVALID_TAG, "Cannot provide multiple Tags with the same key");
            }
        }
        return this;
    }

    /** The attribute that stores these tags. */
    MetaMessages.Xattr xattr() {
        StringBuilder text = new StringBuilder();
        for (Tag tag : tags) {
            if (!text.isEmpty()) {
                text.append('&');
            }
            text.append(SigV4.uriEncode(tag.key(), false)).append('=').append(SigV4.uriEncode(tag.value(), false));
        }
        return new MetaMessages.Xattr(XATTR, text.toString().getBytes(StandardCharsets.UTF_8));
    }

    /** The GetObjectTagging / GetBucketTagging answer. */
    String toXml() {
        Xml xml = Xml.document("Tagging").open("TagSet");
        for (Tag tag : tags) {
            xml.open("Tag").element("Key", tag.key()).element("Value", tag.value()).close("Tag");
        }
        return xml.close("TagSet").end("Tagging");
    }
}
