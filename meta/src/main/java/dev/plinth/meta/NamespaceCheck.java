package dev.plinth.meta;

import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.Layout;
import dev.plinth.meta.store.DentryRecord;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaKeys;
import dev.plinth.meta.store.MetaStore;
import dev.plinth.wire.messages.FsckMessages;
import dev.plinth.wire.messages.FsckMessages.FileChains;
import dev.plinth.wire.messages.FsckMessages.Finding;
import dev.plinth.wire.messages.FsckMessages.FsckReport;
import dev.plinth.wire.messages.HsmMessages;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * `plinth fsck` on one MDT: its namespace checked against itself on one snapshot. Every entry is
 * counted against the inode it names, and every inode against its entries: a file's link count
 * against the entries naming it, a directory's against its subdirectories (2 + one per
 * subdirectory), its child count against its entries and its parent against the entry naming it;
 * an inode no entry names is an orphan unless it is open (unlinked while open), and an entry
 * naming no inode dangles. Holds a few tens of bytes per inode while it runs.
 */
final class NamespaceCheck {
    private static final int PAGE = 10_000;

    private NamespaceCheck() {}

    static FsckReport check(Namespace namespace, int mdtId) {
        Map<Long, Integer> names = new HashMap<>();
        Map<Long, Integer> subdirectories = new HashMap<>();
        Map<Long, Long> entries = new HashMap<>();
        Map<Long, Long> directoryParent = new HashMap<>();
        Map<Long, FileType> namedAs = new HashMap<>();
        Map<Long, Long> remoteNames = new HashMap<>();
        List<FsckMessages.Awaited> awaited = new ArrayList<>();
        long entryCount = 0;
        byte[] after = null;
        while (true) {
            List<byte[][]> page = namespace.scan(new byte[] {MetaKeys.DENTRY}, after, PAGE);
            for (byte[][] pair : page) {
                long parentId = MetaKeys.firstId(pair[0]);
                DentryRecord entry = MetaStore.decode(DentryRecord.class, pair[1]);
                if (entry.pending()) {
                    continue; // a name an open intent reserves: counted in its parent once the intent commits
                }
                if (InodeId.mdtIndex(entry.inodeId()) != mdtId) {
                    remoteNames.merge(entry.inodeId(), 1L, Long::sum);
                } else {
                    names.merge(entry.inodeId(), 1, Integer::sum);
                }
                entries.merge(parentId, 1L, Long::sum);
                namedAs.put(entry.inodeId(), entry.type());
                if (entry.type() == FileType.DIRECTORY) {
                    subdirectories.merge(parentId, 1, Integer::sum);
                    directoryParent.put(entry.inodeId(), parentId);
                }
                entryCount++;
            }
            if (page.size() < PAGE) {
                break;
            }
            after = page.getLast()[0];
        }
        Findings findings = new Findings();
        long inodeCount = 0;
        after = null;
        while (true) {
            List<byte[][]> page = namespace.scan(new byte[] {MetaKeys.INODE}, after, PAGE);
            for (byte[][] pair : page) {
                InodeRecord inode = MetaStore.decode(InodeRecord.class, pair[1]);
                long id = inode.inodeId();
                inodeCount++;
                int named = names.getOrDefault(id, 0);
                names.remove(id);
                FileType entryType = namedAs.get(id);
                if (entryType != null && entryType != inode.type()) {
                    findings.add("type-mismatch", id, "an entry names it a " + entryType + ", the inode is a " + inode.type());
                }
                if (inode.isDirectory()) {
                    int expectedLinks = 2 + subdirectories.getOrDefault(id, 0);
                    if (inode.linkCount() != expectedLinks) {
                        findings.add("directory-links", id, "link count " + inode.linkCount() + ", " + expectedLinks + " by its subdirectories");
                    }
                    long children = entries.getOrDefault(id, 0L);
                    if (inode.childCount() != children) {
                        findings.add("child-count", id, "child count " + inode.childCount() + ", " + children + " entries");
                    }
                    if (id == InodeId.ROOT) {
                        continue;
                    }
                    if (InodeId.mdtIndex(inode.parentId()) != mdtId) { // named on its parent's MDT
                        if (named > 0) {
                            findings.add("link-count", id, "a directory on another MDT than its parent's, named by " + named + " entries here");
                        } else if (awaited.size() < FsckMessages.CROSS_MDT_MAX) {
                            awaited.add(new FsckMessages.Awaited(id, 1, new Finding("orphan-inode", id,
                                    "a directory whose parent " + InodeId.format(inode.parentId()) + " is on MDT " + InodeId.mdtIndex(inode.parentId()))));
                        }
                        continue;
                    }
                    if (named == 0) {
                        findings.add("orphan-inode", id, "a directory no entry names");
                    } else if (named > 1) {
                        findings.add("link-count", id, "a directory named by " + named + " entries");
                    } else if (directoryParent.getOrDefault(id, -1L) != inode.parentId()) {
                        findings.add("directory-parent", id, "its parent is " + InodeId.format(inode.parentId()) + ", the entry naming it is in "
                                + InodeId.format(directoryParent.getOrDefault(id, -1L)));
                    }
                } else if (named == 0 && namespace.getRaw(MetaKeys.id(MetaKeys.ORPHAN, id)) != null) {
                    continue; // unlinked while open
                } else if (inode.linkCount() < named) {
                    findings.add("link-count", id, "link count " + inode.linkCount() + ", named by " + named + " entries");
                } else if (inode.linkCount() > named && awaited.size() < FsckMessages.CROSS_MDT_MAX) {
                    // the rest of its names may be on other MDTs (a link or rename across them): the tool weighs them
                    Finding unlessNamed = named == 0
                            ? new Finding("orphan-inode", id, "a " + inode.type() + " of " + inode.sizeBytes() + " bytes no entry here names, and not open")
                            : new Finding("link-count", id, "link count " + inode.linkCount() + ", named by " + named + " entries here");
                    awaited.add(new FsckMessages.Awaited(id, inode.linkCount() - named, unlessNamed));
                }
            }
            if (page.size() < PAGE) {
                break;
            }
            after = page.getLast()[0];
        }
        for (Map.Entry<Long, Integer> missing : names.entrySet()) {
            if (InodeId.mdtIndex(missing.getKey()) == mdtId) {
                findings.add("dangling-entry", missing.getKey(), missing.getValue() + " entries name an inode that does not exist");
            }
        }
        List<FsckMessages.NameCount> remote = remoteNames.entrySet().stream().limit(FsckMessages.CROSS_MDT_MAX)
                .map(e -> new FsckMessages.NameCount(e.getKey(), e.getValue())).toList();
        if (remote.size() < remoteNames.size() || awaited.size() == FsckMessages.CROSS_MDT_MAX) {
            findings.add("cross-mdt-unchecked", 0, "more than " + FsckMessages.CROSS_MDT_MAX + " names cross MDTs: the rest were not checked");
        }
        return new FsckReport(mdtId, inodeCount, entryCount, findings.total, findings.list, remote, awaited);
    }

    /** Files with data on chains (or, with {@code removed}, removed files whose chunks are being freed), a page at a time. */
    static FsckMessages.FileChainList fileChains(Namespace namespace, long afterInodeId, int limit, boolean removed) {
        byte kind = removed ? MetaKeys.REMOVED : MetaKeys.INODE;
        List<byte[][]> page = namespace.scan(new byte[] {kind}, afterInodeId == 0 ? null : MetaKeys.id(kind, afterInodeId), limit);
        List<FileChains> files = new ArrayList<>();
        for (byte[][] pair : page) {
            if (removed) {
                Layout layout = MetaStore.decode(Layout.class, pair[1]);
                files.add(new FileChains(MetaKeys.firstId(pair[0]), layout.chainIds(), false, true, layout.chunkOwnerId()));
                continue;
            }
            InodeRecord inode = MetaStore.decode(InodeRecord.class, pair[1]);
            if (inode.type() != FileType.FILE || inode.layout() == null || inode.layout().chainIds().isEmpty()) {
                continue;
            }
            boolean released = (HsmMessages.statesOf(inode.flags()) & HsmMessages.RELEASED) != 0;
            boolean open = namespace.isOpen(inode.inodeId());
            boolean beyondMdt = inode.sizeBytes() > inode.layout().mdtBytes();
            files.add(new FileChains(inode.inodeId(), inode.layout().chainIds(), beyondMdt && !released && !open, false,
                    inode.layout().chunkOwnerId()));
        }
        return new FsckMessages.FileChainList(files, page.size() == limit, page.isEmpty() ? afterInodeId : MetaKeys.firstId(page.getLast()[0]));
    }

    private static final class Findings {
        final List<Finding> list = new ArrayList<>();
        long total;

        void add(String kind, long inodeId, String detail) {
            total++;
            if (list.size() < FsckMessages.FINDINGS_MAX) {
                list.add(new Finding(kind, inodeId, detail));
            }
        }
    }
}
