package dev.plinth.fuse;

import dev.plinth.client.PlinthClient;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.ReadDirPlusReply;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;

/**
 * One opendir: the directory's entries by index, "." and ".." first, then children in name
 * order, fetched a page at a time with their attributes. Only one page is held, plus the name
 * each page resumes after, so a directory of millions of entries costs a page of memory, and a
 * seek back (rewinddir, telldir/seekdir) re-fetches from the nearest page start.
 *
 * <p>Entries added or removed while the directory is being read may or may not be seen, as POSIX
 * allows; no entry is returned twice, since pages resume after a name. Not thread-safe: callers
 * hold the handle's monitor.
 */
final class DirHandle {
    record Entry(String name, Attributes attributes) {}

    private static final int DOT_ENTRIES = 2;

    private final PlinthClient client;
    private final long inodeId;
    private final int pageSize;
    /** Index of the first child in a page, and the name that page is fetched after. */
    private final NavigableMap<Long, String> pageStarts = new TreeMap<>();
    private final Attributes self;
    private long pageStart = -1;
    private ReadDirPlusReply page;

    DirHandle(PlinthClient client, Attributes directory, int pageSize) {
        this.client = client;
        this.inodeId = directory.inodeId();
        this.self = directory;
        this.pageSize = pageSize;
        pageStarts.put(0L, "");
    }

    /** The directory's attributes when it was opened. */
    Attributes lastKnown() {
        return self;
    }

    /** The entry at {@code index}, or null past the end. */
    Entry entry(long index) {
        if (index < DOT_ENTRIES) {
            return new Entry(index == 0 ? "." : "..", self); // the kernel fills in ".."'s real inode itself
        }
        long child = index - DOT_ENTRIES;
        if (page == null || child < pageStart || child >= pageStart + page.entries().size()) {
            if (!load(child)) {
                return null;
            }
        }
        int at = (int) (child - pageStart);
        return new Entry(page.entries().get(at).name(), page.attributes().get(at));
    }

    /** Makes the page holding child {@code child} current; false if the directory ends before it. */
    private boolean load(long child) {
        var start = pageStarts.floorEntry(child);
        long index = start.getKey();
        String after = start.getValue();
        while (true) {
            ReadDirPlusReply reply = client.readDirPlus(inodeId, after, pageSize);
            pageStart = index;
            page = reply;
            List<?> entries = reply.entries();
            if (child < index + entries.size()) {
                return true;
            }
            if (!reply.more() || entries.isEmpty()) {
                return false;
            }
            index += entries.size();
            after = reply.entries().getLast().name();
            pageStarts.put(index, after);
        }
    }
}
