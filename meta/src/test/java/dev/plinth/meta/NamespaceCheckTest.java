package dev.plinth.meta;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.common.Credentials;
import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.Layout;
import dev.plinth.meta.store.InodeRecord;
import dev.plinth.meta.store.MetaStore;
import dev.plinth.wire.messages.FsckMessages.Finding;
import dev.plinth.wire.messages.FsckMessages.FsckReport;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.OpHeader;
import java.nio.file.Path;
import java.util.List;
import java.util.function.Consumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.rocksdb.WriteBatchWithIndex;

/** `plinth fsck`'s namespace check: silent on a namespace the operations made, and each kind of damage found where it is. */
class NamespaceCheckTest {
    private static final OpHeader HEADER = new OpHeader(0, 0, Credentials.ROOT, 1_000_000_000L);

    @TempDir
    Path directory;

    private MetaStore store;
    private long index;

    @BeforeEach
    void open() {
        store = MetaStore.open(directory, 0);
        change(namespace -> namespace.putInode(new InodeRecord(InodeId.ROOT, FileType.DIRECTORY, 0755, 0, 0, 2, 0, 1, 1, 1, 1,
                InodeId.ROOT, new Layout(1, 1 << 20, 1 << 20, "default", 1, List.of()), null, 0)));
    }

    @AfterEach
    void close() {
        store.close();
    }

    private void change(Consumer<Namespace> change) {
        try (WriteBatchWithIndex batch = new WriteBatchWithIndex(true)) {
            change.accept(new Namespace(store, batch, 0, HEADER));
            index++;
            store.commit(batch, 1, index);
        }
    }

    private MetaMessages.Attributes apply(MetaMessages.Mutation mutation) {
        MetaMessages.Attributes[] result = new MetaMessages.Attributes[1];
        change(namespace -> result[0] = ((MetaMessages.AttributesReply) Operations.mutate(namespace, mutation, index + 1, 5_000)).attributes());
        return result[0];
    }

    private FsckReport check() {
        return NamespaceCheck.check(new Namespace(store, null, 0, HEADER), 0);
    }

    @Test
    void aNamespaceTheOperationsMadeHasNoFindings() {
        long dir = apply(new MetaMessages.Mkdir(HEADER, InodeId.ROOT, "d", 0755)).inodeId();
        apply(new MetaMessages.Mkdir(HEADER, dir, "sub", 0755));
        long fifo = apply(new MetaMessages.MakeNode(HEADER, dir, "fifo", FileType.FIFO, 0644, 0)).inodeId();
        apply(new MetaMessages.Link(HEADER, fifo, InodeId.ROOT, "fifo-link"));
        apply(new MetaMessages.Symlink(HEADER, InodeId.ROOT, "s", "d/fifo"));
        FsckReport report = check();
        assertThat(dev.plinth.wire.messages.FsckMessages.findings(List.of(report))).isEmpty();
        assertThat(report.inodes()).isEqualTo(5);
        assertThat(report.entries()).isEqualTo(5);
    }

    @Test
    void eachKindOfDamageIsFoundOnItsInode() {
        long dir = apply(new MetaMessages.Mkdir(HEADER, InodeId.ROOT, "d", 0755)).inodeId();
        long fifo = apply(new MetaMessages.MakeNode(HEADER, dir, "fifo", FileType.FIFO, 0644, 0)).inodeId();
        long lost = apply(new MetaMessages.Symlink(HEADER, dir, "lost", "x")).inodeId();
        long gone = apply(new MetaMessages.Symlink(HEADER, InodeId.ROOT, "gone", "y")).inodeId();
        change(namespace -> {
            namespace.putInode(namespace.inode(fifo).withLinkCount(3, 1));          // a link count that no entries back
            namespace.deleteDentry(dir, "lost");                                   // an inode no entry names (and the directory's count off)
            namespace.delete(dev.plinth.meta.store.MetaKeys.id(dev.plinth.meta.store.MetaKeys.INODE, gone)); // an entry naming nothing
        });
        List<Finding> findings = dev.plinth.wire.messages.FsckMessages.findings(List.of(check()));
        assertThat(findings).extracting(Finding::kind, Finding::inodeId).containsExactlyInAnyOrder(
                org.assertj.core.groups.Tuple.tuple("link-count", fifo),
                org.assertj.core.groups.Tuple.tuple("orphan-inode", lost),
                org.assertj.core.groups.Tuple.tuple("child-count", dir),
                org.assertj.core.groups.Tuple.tuple("dangling-entry", gone));
    }
}
