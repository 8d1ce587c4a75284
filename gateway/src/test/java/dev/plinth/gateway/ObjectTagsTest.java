package dev.plinth.gateway;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;

class ObjectTagsTest {
    private static ObjectTags fromXml(String xml, int max) {
        return ObjectTags.fromXml(Xml.parse(new ByteArrayInputStream(xml.getBytes(StandardCharsets.UTF_8))), max);
    }

    @Test
    void headerXmlAndAttributeFormsAgree() {
        ObjectTags fromHeader = ObjectTags.fromHeader("project=plinth&owner=a%20b&empty=");
        assertEquals(List.of(new ObjectTags.Tag("project", "plinth"), new ObjectTags.Tag("owner", "a b"), new ObjectTags.Tag("empty", "")),
                fromHeader.tags());
        ObjectTags stored = ObjectTags.fromXattr(fromHeader.xattr().value());
        assertEquals(fromHeader, stored);
        ObjectTags fromXml = fromXml("<Tagging><TagSet><Tag><Key>project</Key><Value>plinth</Value></Tag>"
                + "<Tag><Key> spaced key </Key><Value>x&amp;y=z</Value></Tag></TagSet></Tagging>", 10);
        assertEquals(new ObjectTags.Tag(" spaced key ", "x&y=z"), fromXml.tags().get(1));
        assertEquals(fromXml, ObjectTags.fromXattr(fromXml.xattr().value()));
        assertTrue(fromXml.toXml().contains("<Key> spaced key </Key><Value>x&amp;y=z</Value>"));
    }

    @Test
    void whatS3RefusesIsRefused() {
        assertEquals(S3Error.INVALID_TAG, assertThrows(S3Exception.class, () -> ObjectTags.fromHeader("a=1&a=2")).error());
        assertEquals(S3Error.INVALID_TAG, assertThrows(S3Exception.class, () -> ObjectTags.fromHeader("aws:x=1")).error());
        assertEquals(S3Error.INVALID_TAG, assertThrows(S3Exception.class, () -> ObjectTags.fromHeader("=1")).error());
        assertEquals(S3Error.INVALID_TAG, assertThrows(S3Exception.class, () -> ObjectTags.fromHeader("k=" + "v".repeat(257))).error());
        StringBuilder eleven = new StringBuilder();
        for (int i = 0; i < 11; i++) {
            eleven.append(i == 0 ? "" : "&").append("k").append(i).append("=v");
        }
        assertEquals(S3Error.INVALID_TAG, assertThrows(S3Exception.class, () -> ObjectTags.fromHeader(eleven.toString())).error());
        assertEquals(S3Error.MALFORMED_XML, assertThrows(S3Exception.class, () -> fromXml("<Tagging><Tag/></Tagging>", 10)).error());
        assertEquals(S3Error.MALFORMED_XML,
                assertThrows(S3Exception.class, () -> fromXml("<Tagging><TagSet><Tag><Key>k</Key></Tag></TagSet></Tagging>", 10)).error());
    }

    @Test
    void anAttributeChangedThroughTheMountIntoNonsenseReadsAsNoTags() {
        assertTrue(ObjectTags.fromXattr("%zz".getBytes(StandardCharsets.UTF_8)).isEmpty());
    }
}
