package dev.plinth.gateway;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import dev.plinth.wire.messages.MetaMessages.ReadDirPlusReply;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.TreeMap;

/**
 * Lists a bucket's keys in S3 order (UTF-8 byte order of the whole key) by walking its
 * directory tree lazily, a readdir page at a time. A directory {@code d} holds the keys that start
 * with {@code d/}; since '/' sorts after '-' and '.', the keys {@code d-x} and {@code d.x} come
 * before them, so each directory is held back until the entries that sort before {@code d/} in
 * the same directory have been passed. A delimiter collapses a whole subtree into one common
 * prefix without walking it; start-after and continuation tokens skip subtrees that lie before
 * them. Work per page is bounded by the page size plus the depth of the tree.
 */
final class ObjectListing {
    private static final int PAGE_ENTRIES = 1024;

    /** An object (a file, or an empty directory listed as "key/") or a common prefix; {@code record} as stored, if any. */
    record Item(String key, Attributes attributes, boolean commonPrefix, ObjectRecord record) {
        Item(String key, Attributes attributes, boolean commonPrefix) {
            this(key, attributes, commonPrefix, null);
        }
    }

    record Page(List<Item> items, boolean truncated) {}

    private final PlinthClient client;

    ObjectListing(PlinthClient client) {
        this.client = client;
    }

    /** One directory being walked: its entries in name order, and subdirectories held back until their turn. */
    private final class Cursor {
        final long inodeId;
        final String keyPrefix; // "" for the bucket, "a/b/" below it
        final TreeMap<String, Attributes> heldDirectories = new TreeMap<>(ObjectListing::compareKeys);
        final Deque<Item> buffered = new ArrayDeque<>();
        String after;
        boolean more = true;
        boolean sawAny;

        Cursor(long inodeId, String keyPrefix, String after) {
            this.inodeId = inodeId;
            this.keyPrefix = keyPrefix;
            this.after = after;
        }

        void fill() {
            if (!buffered.isEmpty() || !more) {
                return;
            }
            // the S3 records come with the page: one query per page, not one per object
            ReadDirPlusReply page = client.objects().readDirPlus(inodeId, after, PAGE_ENTRIES, ObjectRecord.XATTR);
            for (int i = 0; i < page.entries().size(); i++) {
                DirEntry entry = page.entries().get(i);
                Attributes attributes = page.attributes().get(i);
                after = entry.name();
                if (entry.name().startsWith(S3Namespace.HIDDEN_PREFIX)) {
                    continue;
                }
                sawAny = true;
                if (attributes.type() == FileType.DIRECTORY) {
                    buffered.add(new Item(keyPrefix + entry.name() + "/", attributes, false));
                } else if (attributes.type() == FileType.FILE) {
                    buffered.add(new Item(keyPrefix + entry.name(), attributes, false,
                            i < page.xattrValues().size() ? ObjectRecord.decode(page.xattrValues().get(i)) : null));
                }
            }
            more = page.more() && !page.entries().isEmpty();
        }

        /** The next key of this directory in S3 order (a directory item stands for its subtree), or null when done. */
        Item next() {
            while (true) {
                fill();
                Item raw = buffered.peek();
                if (!heldDirectories.isEmpty() && (raw == null || compareKeys(heldDirectories.firstKey(), raw.key()) < 0)) {
                    var first = heldDirectories.pollFirstEntry();
                    return new Item(first.getKey(), first.getValue(), false);
                }
                if (raw == null) {
                    return null;
                }
                buffered.poll();
                if (raw.attributes().isDirectory()) {
                    heldDirectories.put(raw.key(), raw.attributes());
                } else {
                    return raw;
                }
            }
        }
    }

    /** S3 order: unsigned UTF-8 bytes. Java's UTF-16 order differs only above U+FFFF's surrogates; compare code points. */
    static int compareKeys(String a, String b) {
        int i = 0;
        int j = 0;
        while (i < a.length() && j < b.length()) {
            int ca = a.codePointAt(i);
            int cb = b.codePointAt(j);
            if (ca != cb) {
                return Integer.compare(ca, cb);
            }
            i += Character.charCount(ca);
            j += Character.charCount(cb);
        }
        return Integer.compare(a.length() - i, b.length() - j);
    }

    /**
     * A page of up to {@code maxKeys} items after {@code after} ("" for the start) whose keys begin
     * with {@code prefix}, common prefixes grouped by {@code delimiter} (null for none).
     */
    Page list(long bucketInodeId, String bucketPath, String prefix, String delimiter, String after, int maxKeys) {
        List<Item> items = new ArrayList<>();
        if (maxKeys <= 0) {
            return new Page(items, false);
        }
        Deque<Cursor> stack = new ArrayDeque<>();
        // Start in the deepest directory that the prefix names, so a listing of a/b/ never reads the rest.
        String startPrefix = prefix.contains("/") ? prefix.substring(0, prefix.lastIndexOf('/') + 1) : "";
        if (startPrefix.startsWith("/") || startPrefix.contains("//")) {
            return new Page(items, false); // no key has an empty path component, so none starts so
        }
        long startInode = bucketInodeId;
        if (!startPrefix.isEmpty()) {
            try {
                Attributes start = client.stat(bucketPath + "/" + startPrefix.substring(0, startPrefix.length() - 1));
                if (!start.isDirectory()) {
                    return new Page(items, false);
                }
                startInode = start.inodeId();
            } catch (PlinthException e) {
                if (e.code() == ErrorCode.NOT_FOUND || e.code() == ErrorCode.NOT_A_DIRECTORY) {
                    return new Page(items, false);
                }
                throw e;
            }
        }
        stack.push(new Cursor(startInode, startPrefix, readdirStart(startPrefix, after)));
        String lastCommonPrefix = null;
        while (!stack.isEmpty()) {
            Cursor cursor = stack.peek();
            Item item = cursor.next();
            if (item == null) {
                stack.pop();
                // an empty directory is the object "dir/" (what S3 tools create as a folder)
                String marker = cursor.keyPrefix;
                if (!cursor.sawAny && !marker.isEmpty() && marker.startsWith(prefix) && compareKeys(marker, after) > 0
                        && delimiterIndex(marker, prefix, delimiter) < 0) {
                    if (items.size() == maxKeys) {
                        return new Page(items, true);
                    }
                    items.add(new Item(marker, null, false));
                }
                continue;
            }
            String key = item.key();
            boolean directory = item.attributes().isDirectory();
            boolean underPrefix = key.startsWith(prefix);
            if (!underPrefix && !(directory && prefix.startsWith(key))) {
                continue;
            }
            if (compareKeys(key, after) <= 0 && !(directory && after.startsWith(key))) {
                continue; // at or before the start, subtree and all
            }
            int delimiterAt = underPrefix ? delimiterIndex(key, prefix, delimiter) : -1;
            if (delimiterAt >= 0) {
                // every key of the subtree starts with this prefix too: one entry, nothing walked
                String commonPrefix = key.substring(0, delimiterAt + delimiter.length());
                if (commonPrefix.equals(lastCommonPrefix) || compareKeys(commonPrefix, after) <= 0) {
                    continue;
                }
                if (items.size() == maxKeys) {
                    return new Page(items, true);
                }
                items.add(new Item(commonPrefix, null, true));
                lastCommonPrefix = commonPrefix;
                continue;
            }
            if (directory) {
                stack.push(new Cursor(item.attributes().inodeId(), key, readdirStart(key, after)));
                continue;
            }
            if (items.size() == maxKeys) {
                return new Page(items, true);
            }
            items.add(item);
        }
        return new Page(items, false);
    }

    /** Where in {@code key} (past the prefix) the delimiter first occurs, or -1. */
    private static int delimiterIndex(String key, String prefix, String delimiter) {
        if (delimiter == null || delimiter.isEmpty()) {
            return -1;
        }
        return key.indexOf(delimiter, prefix.length());
    }

    /**
     * The readdir position to start a directory at when resuming after {@code after}: entries
     * that sort after it, including a directory whose "name/" sorts after it though its name alone
     * sorts before (a prefix of after's name cut where a character below '/' follows).
     */
    static String readdirStart(String keyPrefix, String after) {
        if (!after.startsWith(keyPrefix) || after.length() <= keyPrefix.length()) {
            return "";
        }
        String rest = after.substring(keyPrefix.length());
        int slash = rest.indexOf('/');
        String name = slash < 0 ? rest : rest.substring(0, slash);
        int cut = 0;
        while (cut < name.length() && name.charAt(cut) >= '/') {
            cut++;
        }
        String bound = name.substring(0, cut);
        // readdir returns names after its argument: step back one name so that `bound` itself is included
        return bound.isEmpty() ? "" : bound.substring(0, bound.length() - 1);
    }
}
