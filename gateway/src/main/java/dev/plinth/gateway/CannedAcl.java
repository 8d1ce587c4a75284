package dev.plinth.gateway;

import dev.plinth.wire.messages.MetaMessages.Attributes;
import java.util.Locale;

/**
 * S3's canned ACLs as POSIX modes, which are the one enforcement of access here, for S3 and the
 * mount alike. S3's rule is private by default: a bucket and what is put into it belong to the
 * key that made them and are readable by no one else unless granted.
 *
 * <ul>
 *   <li>{@code private}: a bucket's directory 0700, an object's file 0600.
 *   <li>{@code public-read}: 0755 and 0644; others (every other key, and anonymous readers where
 *       the gateway allows them) may list the bucket and read the object. An object's
 *       {@code public-read} reaches others only through directories they may search.
 *   <li>{@code bucket-owner-full-control}: as {@code private}. The bucket's owner may delete or
 *       replace such an object (it owns the directory) but reads it only if the modes allow.
 * </ul>
 *
 * Without an ACL an object takes its group and other read bits from its directory (and a new
 * directory its read and search bits from its parent), so a bucket made readable, by
 * {@code public-read} or by chmod through the mount, hands that on to what is put into it.
 */
enum CannedAcl {
    PRIVATE,
    PUBLIC_READ;

    private static final String ALL_USERS = "http://acs.amazonaws.com/groups/global/AllUsers";

    /** The ACL a request asks for in x-amz-acl, or null when it names none; grants S3 has that modes cannot say are NotImplemented. */
    static CannedAcl of(S3Exchange exchange) {
        for (var header : exchange.headers()) {
            if (header.getKey().toLowerCase(Locale.ROOT).startsWith("x-amz-grant-")) {
                throw new S3Exception(S3Error.NOT_IMPLEMENTED, "grants (" + header.getKey() + ") are not implemented; use a canned ACL"
                        + " (x-amz-acl: private, public-read or bucket-owner-full-control)");
            }
        }
        String acl = exchange.header("x-amz-acl");
        if (acl == null) {
            return null;
        }
        return switch (acl.strip()) {
            case "private", "bucket-owner-full-control" -> PRIVATE;
            case "public-read" -> PUBLIC_READ;
            default -> throw new S3Exception(S3Error.NOT_IMPLEMENTED, "the canned ACL '" + acl.strip()
                    + "' is not implemented (private, public-read and bucket-owner-full-control are)");
        };
    }

    int directoryMode() {
        return this == PUBLIC_READ ? 0755 : 0700;
    }

    int fileMode() {
        return this == PUBLIC_READ ? 0644 : 0600;
    }

    /** The mode of a new object's file in {@code directory}, with the request's ACL or none. */
    static int fileMode(CannedAcl acl, Attributes directory) {
        return acl != null ? acl.fileMode() : 0600 | (directory.mode() & 0044);
    }

    /** The mode of a new directory (a key's prefix) in {@code parent}. */
    static int directoryMode(Attributes parent) {
        return 0700 | (parent.mode() & 0055);
    }

    /** An existing file's or directory's mode with this ACL: what others may read changes, nothing else. */
    int applyTo(Attributes attributes) {
        int others = attributes.isDirectory() ? 0055 : 0044;
        return (attributes.mode() & 07777 & ~0077) | (this == PUBLIC_READ ? others : 0);
    }

    /**
     * What GetBucketAcl and GetObjectAcl answer: the owner has FULL_CONTROL, and AllUsers READ
     * where others may read (list a bucket, read an object).
     */
    static String policy(Attributes attributes) {
        String owner = String.valueOf(attributes.uid());
        Xml xml = Xml.document("AccessControlPolicy").open("Owner").element("ID", owner).element("DisplayName", owner).close("Owner")
                .open("AccessControlList");
        xml.open("Grant").markup("<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"CanonicalUser\">")
                .element("ID", owner).element("DisplayName", owner).close("Grantee").element("Permission", "FULL_CONTROL").close("Grant");
        if ((attributes.mode() & 0004) != 0) {
            xml.open("Grant").markup("<Grantee xmlns:xsi=\"http://www.w3.org/2001/XMLSchema-instance\" xsi:type=\"Group\">")
                    .element("URI", ALL_USERS).close("Grantee").element("Permission", "READ").close("Grant");
        }
        return xml.close("AccessControlList").end("AccessControlPolicy");
    }
}
