package dev.plinth.integration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Credentials;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.InodeId;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** POSIX namespace semantics through the native client against the in-process cluster. */
class NamespaceTest {
    @TempDir
    static Path directory;
    static MiniCluster cluster;
    static PlinthClient root;

    @BeforeAll
    static void start() {
        cluster = MiniCluster.start(directory);
        root = cluster.client();
    }

    @AfterAll
    static void stop() {
        root.close();
        cluster.close();
    }

    private static void fails(ErrorCode code, ThrowingCallable call) {
        assertThatThrownBy(call).isInstanceOfSatisfying(PlinthException.class, e -> assertThat(e.code()).isEqualTo(code));
    }

    private static void writeFile(PlinthClient client, String path, String text) {
        try (PlinthFile file = client.create(path, 0644, false, null)) {
            file.write(0, ByteBuffer.wrap(text.getBytes(StandardCharsets.UTF_8)));
        }
    }

    private static String readFile(PlinthClient client, String path) {
        try (PlinthFile file = client.open(path, false)) {
            ByteBuffer buffer = ByteBuffer.allocate((int) file.size());
            file.read(0, buffer);
            return new String(buffer.array(), StandardCharsets.UTF_8);
        }
    }

    /** Publish: close, mtime, xattrs and rename in one change, all or nothing. */
    @Test
    void publishPutsAWrittenFileInPlaceAtomically() {
        Attributes dir = root.mkdirs("/publish", 0777);
        writeFile(root, "/publish/target", "old");
        try (PlinthClient alice = cluster.client(new Credentials(4242, 4242, List.of()))) {
            PlinthFile file = alice.createAndOpen(dir.inodeId(), ".tmp-1", 0644, true, null).file();
            file.write(0, ByteBuffer.wrap("new content".getBytes(StandardCharsets.UTF_8)));
            // a refused publish (noReplace over an existing name) changes nothing and keeps the handle open
            fails(ErrorCode.ALREADY_EXISTS, () -> file.publish(dir.inodeId(), ".tmp-1", "target", true, 1_000_000_000L,
                    List.of(new MetaMessages.Xattr("user.k", new byte[] {1}))));
            assertThat(readFile(root, "/publish/target")).isEqualTo("old");
            assertThat(root.exists("/publish/.tmp-1")).isTrue();
            fails(ErrorCode.NO_ATTRIBUTE, () -> root.getXattr(root.stat("/publish/.tmp-1").inodeId(), "user.k"));
            Attributes published = file.publish(dir.inodeId(), ".tmp-1", "target", false, 1_234_000_000L,
                    List.of(new MetaMessages.Xattr("user.k", new byte[] {7})));
            assertThat(published.sizeBytes()).isEqualTo(11);
            assertThat(published.mtimeNanos()).isEqualTo(1_234_000_000L);
            assertThat(root.exists("/publish/.tmp-1")).isFalse();
            assertThat(readFile(root, "/publish/target")).isEqualTo("new content");
            assertThat(root.getXattr(root.stat("/publish/target").inodeId(), "user.k")).containsExactly(7);
            file.close(); // already closed by the publish: a no-op
            // only the owner publishes
            PlinthFile others = root.createAndOpen(dir.inodeId(), ".tmp-2", 0666, true, null).file();
            try (PlinthClient bob = cluster.client(new Credentials(4343, 4343, List.of()));
                 PlinthFile writable = bob.open(root.stat("/publish/.tmp-2").inodeId(), true)) {
                fails(ErrorCode.OPERATION_NOT_PERMITTED, () -> writable.publish(dir.inodeId(), ".tmp-2", "target", false, 1, List.of()));
                fails(ErrorCode.BAD_DESCRIPTOR, () -> bob.openUncounted(root.stat("/publish/.tmp-2"))
                        .publish(dir.inodeId(), ".tmp-2", "target", false, 1, List.of()));
            }
            others.close();
            assertThat(readFile(root, "/publish/target")).isEqualTo("new content");
        }
    }

    /** O_TMPFILE: an unnamed file lives while it is open, and Publish can give it a name. */
    @Test
    void unnamedFilesAreNamedByPublishOrGoAwayAtClose() {
        Attributes dir = root.mkdirs("/unnamed", 0755);
        writeFile(root, "/unnamed/target", "old");
        long inodes = root.statFs().inodes();
        PlinthFile abandoned = root.createUnnamed(dir.inodeId(), 0644, null);
        abandoned.write(0, ByteBuffer.wrap(new byte[100_000]));
        assertThat(root.list("/unnamed")).extracting(DirEntry::name).containsExactly("target");
        assertThat(root.statFs().inodes()).isEqualTo(inodes + 1);
        abandoned.close();
        assertThat(root.statFs().inodes()).isEqualTo(inodes);
        fails(ErrorCode.NOT_FOUND, () -> root.getAttr(abandoned.inodeId()));

        PlinthFile file = root.createUnnamed(dir.inodeId(), 0644, null);
        file.write(0, ByteBuffer.wrap("replacement".getBytes(StandardCharsets.UTF_8)));
        fails(ErrorCode.ALREADY_EXISTS, () -> file.publish(dir.inodeId(), null, "target", true, 5_000_000_000L, List.of()));
        assertThat(root.list("/unnamed")).extracting(DirEntry::name).containsExactly("target");
        Attributes published = file.publish(dir.inodeId(), null, "target", false, 5_000_000_000L,
                List.of(new MetaMessages.Xattr("user.etag", "abc".getBytes(StandardCharsets.UTF_8))));
        assertThat(published.linkCount()).isEqualTo(1);
        assertThat(published.mtimeNanos()).isEqualTo(5_000_000_000L);
        assertThat(readFile(root, "/unnamed/target")).isEqualTo("replacement");
        assertThat(root.statFs().inodes()).isEqualTo(inodes); // the old target went
        try (PlinthFile unnamed = root.createUnnamed(dir.inodeId(), 0644, null)) {
            // an unnamed file has no source name to rename
            fails(ErrorCode.NOT_FOUND, () -> unnamed.publish(dir.inodeId(), "not-a-source", "x", false, 1, List.of()));
        }
        // a dead client's unnamed file goes with its session
        PlinthClient doomed = cluster.client();
        doomed.createUnnamed(dir.inodeId(), 0644, null).write(0, ByteBuffer.wrap(new byte[10]));
        assertThat(root.statFs().inodes()).isGreaterThan(inodes);
        doomed.close();
        assertThat(root.statFs().inodes()).isEqualTo(inodes);
        try (PlinthClient bob = cluster.client(new Credentials(4343, 4343, List.of()))) {
            fails(ErrorCode.PERMISSION_DENIED, () -> bob.createUnnamed(dir.inodeId(), 0644, null));
        }
    }

    @Test
    void invalidNamesAreRejected() {
        long rootId = InodeId.ROOT;
        for (String bad : new String[] {"", ".", "..", "a/b", "a\0b"}) {
            fails(ErrorCode.INVALID_ARGUMENT, () -> root.mkdir(rootId, bad, 0755));
            fails(ErrorCode.INVALID_ARGUMENT, () -> root.create(rootId, bad, 0644, true, null));
        }
        fails(ErrorCode.NAME_TOO_LONG, () -> root.mkdir(rootId, "n".repeat(256), 0755));
        root.mkdir(rootId, "n".repeat(255), 0755);
        root.rmdir(rootId, "n".repeat(255));
    }

    @Test
    void existenceAndTypeErrors() {
        root.mkdirs("/errors/dir", 0755);
        writeFile(root, "/errors/file", "x");
        fails(ErrorCode.ALREADY_EXISTS, () -> root.mkdir("/errors/dir", 0755));
        fails(ErrorCode.ALREADY_EXISTS, () -> root.create("/errors/file", 0644, true, null));
        fails(ErrorCode.NOT_FOUND, () -> root.stat("/errors/missing"));
        fails(ErrorCode.NOT_A_DIRECTORY, () -> root.stat("/errors/file/below"));
        fails(ErrorCode.NOT_A_DIRECTORY, () -> root.mkdir("/errors/file/below", 0755));
        fails(ErrorCode.IS_A_DIRECTORY, () -> root.create("/errors/dir", 0644, false, null));
        fails(ErrorCode.IS_A_DIRECTORY, () -> root.unlink(root.stat("/errors").inodeId(), "dir"));
        fails(ErrorCode.NOT_A_DIRECTORY, () -> root.rmdir(root.stat("/errors").inodeId(), "file"));
        writeFile(root, "/errors/dir/inside", "y");
        fails(ErrorCode.DIRECTORY_NOT_EMPTY, () -> root.delete("/errors/dir"));
        fails(ErrorCode.IS_A_DIRECTORY, () -> root.open("/errors/dir", false));
    }

    @Test
    void renameSemantics() {
        root.mkdirs("/rename/a/sub", 0755);
        root.mkdirs("/rename/empty", 0755);
        root.mkdirs("/rename/full/x", 0755);
        writeFile(root, "/rename/f1", "one");
        writeFile(root, "/rename/f2", "two");
        root.rename("/rename/f1", "/rename/f2");                // file over file
        assertThat(readFile(root, "/rename/f2")).isEqualTo("one");
        assertThat(root.exists("/rename/f1")).isFalse();
        fails(ErrorCode.IS_A_DIRECTORY, () -> root.rename("/rename/f2", "/rename/empty"));
        fails(ErrorCode.NOT_A_DIRECTORY, () -> root.rename("/rename/a", "/rename/f2"));
        fails(ErrorCode.DIRECTORY_NOT_EMPTY, () -> root.rename("/rename/a", "/rename/full"));
        fails(ErrorCode.INVALID_ARGUMENT, () -> root.rename("/rename/a", "/rename/a/sub/into"));
        fails(ErrorCode.INVALID_ARGUMENT, () -> root.rename("/rename/a", "/rename/a/inside"));
        long linksBefore = root.stat("/rename").linkCount();
        root.rename("/rename/a", "/rename/empty");              // directory over empty directory
        assertThat(root.stat("/rename/empty/sub").isDirectory()).isTrue();
        assertThat(root.stat("/rename").linkCount()).isEqualTo(linksBefore - 1);
        root.rename("/rename/empty/sub", "/rename/moved");      // across directories: ".." follows
        Attributes moved = root.stat("/rename/moved");
        assertThat(root.lookup(moved.inodeId(), "..").inodeId()).isEqualTo(root.stat("/rename").inodeId());
        long rename = root.stat("/rename").inodeId();
        fails(ErrorCode.ALREADY_EXISTS, () -> root.rename(rename, "f2", rename, "moved", true));
        root.rename("/rename/f2", "/rename/f2");                // onto itself: nothing happens
        assertThat(readFile(root, "/rename/f2")).isEqualTo("one");
    }

    @Test
    void hardLinksAndSymlinks() {
        root.mkdirs("/links", 0755);
        writeFile(root, "/links/original", "data");
        root.link("/links/original", "/links/second");
        assertThat(root.stat("/links/original").linkCount()).isEqualTo(2);
        root.delete("/links/original");
        assertThat(root.stat("/links/second").linkCount()).isEqualTo(1);
        assertThat(readFile(root, "/links/second")).isEqualTo("data");
        fails(ErrorCode.OPERATION_NOT_PERMITTED, () -> root.link("/links", "/links/dirlink"));

        root.symlink("/links/relative", "second");
        root.symlink("/links/absolute", "/links/second");
        assertThat(root.readLink("/links/relative")).isEqualTo("second");
        assertThat(root.lstat("/links/relative").type()).isEqualTo(FileType.SYMLINK);
        assertThat(root.lstat("/links/relative").sizeBytes()).isEqualTo(6);
        assertThat(readFile(root, "/links/relative")).isEqualTo("data");
        assertThat(readFile(root, "/links/absolute")).isEqualTo("data");
        root.symlink("/links/loop1", "loop2");
        root.symlink("/links/loop2", "loop1");
        fails(ErrorCode.SYMLINK_LOOP, () -> root.stat("/links/loop1"));
        root.mkdirs("/links/real/deeper", 0755);
        root.symlink("/links/dirlink", "real");
        assertThat(root.stat("/links/dirlink/deeper").inodeId()).isEqualTo(root.stat("/links/real/deeper").inodeId());
    }

    @Test
    void extendedAttributes() {
        writeFile(root, "/xattrs", "");
        long inode = root.stat("/xattrs").inodeId();
        root.setXattr(inode, "user.label", "cat".getBytes(StandardCharsets.UTF_8), 0);
        root.setXattr(inode, "user.other", new byte[0], MetaMessages.XATTR_CREATE);
        fails(ErrorCode.ALREADY_EXISTS, () -> root.setXattr(inode, "user.label", new byte[1], MetaMessages.XATTR_CREATE));
        fails(ErrorCode.NO_ATTRIBUTE, () -> root.setXattr(inode, "user.none", new byte[1], MetaMessages.XATTR_REPLACE));
        assertThat(new String(root.getXattr(inode, "user.label"), StandardCharsets.UTF_8)).isEqualTo("cat");
        assertThat(root.listXattr(inode)).containsExactlyInAnyOrder("user.label", "user.other");
        root.removeXattr(inode, "user.label");
        fails(ErrorCode.NO_ATTRIBUTE, () -> root.getXattr(inode, "user.label"));
        fails(ErrorCode.NOT_SUPPORTED, () -> root.setXattr(inode, "system.posix_acl_access", new byte[1], 0));
        fails(ErrorCode.RESULT_TOO_LARGE, () -> root.setXattr(inode, "user.big", new byte[65 * 1024], 0));
    }

    @Test
    void permissionsForOrdinaryUsers() {
        root.mkdirs("/perm/private", 0700);
        root.mkdirs("/perm/shared", 0777);
        writeFile(root, "/perm/readonly", "secret");
        root.setAttr(root.stat("/perm/readonly").inodeId(), MetaMessages.SET_MODE, 0600, 0, 0, 0, 0, 0);
        try (PlinthClient alice = cluster.client(new Credentials(1000, 1000, List.of()))) {
            fails(ErrorCode.PERMISSION_DENIED, () -> alice.mkdir("/perm/private/mine", 0755));
            fails(ErrorCode.PERMISSION_DENIED, () -> alice.stat("/perm/private/anything"));
            fails(ErrorCode.PERMISSION_DENIED, () -> alice.open("/perm/readonly", false));
            fails(ErrorCode.PERMISSION_DENIED, () -> alice.create("/perm/new", 0644, true, null));
            Attributes mine = alice.mkdir("/perm/shared/alice", 0755);
            assertThat(mine.uid()).isEqualTo(1000);
            assertThat(mine.gid()).isEqualTo(1000);
            long readonly = alice.stat("/perm/readonly").inodeId();
            fails(ErrorCode.OPERATION_NOT_PERMITTED, () -> alice.setAttr(readonly, MetaMessages.SET_MODE, 0777, 0, 0, 0, 0, 0));
            fails(ErrorCode.OPERATION_NOT_PERMITTED, () -> alice.setAttr(mine.inodeId(), MetaMessages.SET_UID, 0, 0, 0, 0, 0, 0));
            alice.setAttr(mine.inodeId(), MetaMessages.SET_MODE, 0700, 0, 0, 0, 0, 0);
            writeFile(alice, "/perm/shared/alice/notes", "hello");
            assertThat(readFile(alice, "/perm/shared/alice/notes")).isEqualTo("hello");
        }
        try (PlinthClient bob = cluster.client(new Credentials(1001, 1001, List.of()))) {
            fails(ErrorCode.PERMISSION_DENIED, () -> bob.stat("/perm/shared/alice/notes"));
        }
        root.setAttr(root.stat("/perm/shared").inodeId(), MetaMessages.SET_MODE, 01777, 0, 0, 0, 0, 0);
        try (PlinthClient bob = cluster.client(new Credentials(1001, 1001, List.of()))) {
            fails(ErrorCode.OPERATION_NOT_PERMITTED, () -> bob.rename("/perm/shared/alice", "/perm/shared/bobs"));
        }
    }

    /**
     * Path resolution keeps directories' records in a cache (design note 66): a change to a
     * directory is seen by every query that starts after it, however many queries ran meanwhile.
     */
    @Test
    void directoryChangesAreSeenByTheNextQuery() throws Exception {
        root.mkdirs("/cached/d", 0755);
        writeFile(root, "/cached/d/f", "x");
        long d = root.stat("/cached/d").inodeId();
        long f = root.stat("/cached/d/f").inodeId();
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        try (PlinthClient alice = cluster.client(new Credentials(1000, 1000, List.of()));
             PlinthClient readers = cluster.client(new Credentials(1000, 1000, List.of()))) {
            // readers racing the changes, so that queries keep storing what they read while commits happen
            List<Thread> racing = new java.util.ArrayList<>();
            for (int i = 0; i < 2; i++) {
                racing.add(Thread.ofPlatform().start(() -> {
                    while (!done.get()) {
                        for (String path : List.of("/cached/d/f", "/cached/e/f", "/cached/d", "/cached/g")) {
                            try {
                                readers.stat(path);
                            } catch (PlinthException e) {
                                // missing or not permitted at this moment: what it sees is checked below
                            }
                        }
                    }
                }));
            }
            try {
                for (int i = 0; i < 200; i++) {
                    int mode = i % 2 == 0 ? 0700 : 0755;
                    root.setAttr(d, MetaMessages.SET_MODE, mode, 0, 0, 0, 0, 0);
                    assertThat(root.stat("/cached/d").mode() & 07777).isEqualTo(mode);
                    if (mode == 0755) {
                        assertThat(alice.stat("/cached/d/f").inodeId()).isEqualTo(f);
                    } else {
                        fails(ErrorCode.PERMISSION_DENIED, () -> alice.stat("/cached/d/f"));
                    }
                }
                for (int i = 0; i < 100; i++) {
                    root.rename("/cached/d", "/cached/e");
                    fails(ErrorCode.NOT_FOUND, () -> alice.stat("/cached/d/f"));
                    assertThat(alice.stat("/cached/e").inodeId()).isEqualTo(d);
                    root.rename("/cached/e", "/cached/d");
                    fails(ErrorCode.NOT_FOUND, () -> alice.stat("/cached/e"));
                    assertThat(alice.stat("/cached/d/f").inodeId()).isEqualTo(f);
                }
                long previous = root.mkdir("/cached/g", 0755).inodeId();
                for (int i = 0; i < 100; i++) {
                    root.rmdir(root.stat("/cached").inodeId(), "g");
                    fails(ErrorCode.NOT_FOUND, () -> alice.stat("/cached/g"));
                    long again = root.mkdir("/cached/g", 0755).inodeId();
                    assertThat(alice.stat("/cached/g").inodeId()).isEqualTo(again).isNotEqualTo(previous);
                    previous = again;
                }
            } finally {
                done.set(true);
                for (Thread thread : racing) {
                    thread.join();
                }
            }
        }
    }

    /**
     * Queries keep files' records in the same cache: their inodes and entries, xattrs and
     * Data-on-MDT bytes, and the absence of each (design note 69). Every change to a file is seen
     * by the next query, with readers racing the changes so that queries keep storing what they read.
     */
    @Test
    void fileChangesAreSeenByTheNextQuery() throws Exception {
        long dir = root.mkdirs("/cachedfiles", 0777).inodeId();
        java.util.concurrent.atomic.AtomicBoolean done = new java.util.concurrent.atomic.AtomicBoolean();
        try (PlinthClient readers = cluster.client(new Credentials(1000, 1000, List.of()))) {
            List<Thread> racing = new java.util.ArrayList<>();
            for (int i = 0; i < 2; i++) {
                racing.add(Thread.ofPlatform().start(() -> {
                    while (!done.get()) {
                        for (String path : List.of("/cachedfiles/f", "/cachedfiles/g")) {
                            try {
                                readers.objects().statWithXattrAndBytes(path, "user.v", 4096);
                            } catch (PlinthException e) {
                                // missing at this moment: what it sees is checked below
                            }
                        }
                    }
                }));
            }
            try {
                for (int i = 0; i < 100; i++) {
                    byte[] bytes = ("version " + i).getBytes(StandardCharsets.UTF_8);
                    // replaced whole, as an S3 PUT does: new inode, bytes and xattr under the same name
                    long inode = root.objects().putWhole(dir, "f", 0644, bytes, 0, List.of(new MetaMessages.Xattr("user.v", bytes)), false).inodeId();
                    MetaMessages.AttributesReply seen = root.objects().statWithXattrAndBytes("/cachedfiles/f", "user.v", 4096);
                    assertThat(seen.attributes().inodeId()).isEqualTo(inode);
                    assertThat(seen.fileBytes()).isEqualTo(bytes);
                    assertThat(seen.xattrValue()).isEqualTo(bytes);
                    // the same inode changed in place: its xattr, its bytes through a handle, its length
                    root.setXattr(inode, "user.v", "changed".getBytes(StandardCharsets.UTF_8), 0);
                    assertThat(root.objects().statWithXattr("/cachedfiles/f", "user.v").xattrValue()).asString().isEqualTo("changed");
                    root.removeXattr(inode, "user.v");
                    assertThat(root.objects().statWithXattr("/cachedfiles/f", "user.v").xattrValue()).isNull();
                    try (PlinthFile file = root.open("/cachedfiles/f", true)) {
                        file.write(0, ByteBuffer.wrap("VERSION".getBytes(StandardCharsets.UTF_8)));
                    }
                    assertThat(readFile(readers, "/cachedfiles/f")).isEqualTo("VERSION " + i);
                    assertThat(root.objects().statWithXattrAndBytes("/cachedfiles/f", "user.v", 4096).fileBytes()).asString().isEqualTo("VERSION " + i);
                    root.setAttr(inode, MetaMessages.SET_SIZE, 0, 0, 0, 3, 0, 0);
                    assertThat(root.objects().statWithXattrAndBytes("/cachedfiles/f", "user.v", 4096).fileBytes()).asString().isEqualTo("VER");
                    // a file renamed over it, then the name removed
                    writeFile(root, "/cachedfiles/g", "other " + i);
                    long other = root.stat("/cachedfiles/g").inodeId();
                    root.rename("/cachedfiles/g", "/cachedfiles/f");
                    fails(ErrorCode.NOT_FOUND, () -> readers.stat("/cachedfiles/g"));
                    assertThat(readers.stat("/cachedfiles/f").inodeId()).isEqualTo(other);
                    assertThat(readFile(readers, "/cachedfiles/f")).isEqualTo("other " + i);
                    root.unlink(dir, "f");
                    fails(ErrorCode.NOT_FOUND, () -> readers.objects().statWithXattrAndBytes("/cachedfiles/f", "user.v", 4096));
                }
            } finally {
                done.set(true);
                for (Thread thread : racing) {
                    thread.join();
                }
            }
        }
    }

    @Test
    void readDirPagesAreStableUnderConcurrentChanges() {
        root.mkdirs("/many", 0755);
        long dir = root.stat("/many").inodeId();
        for (int i = 0; i < 2500; i++) {
            root.create(dir, String.format("f%05d", i), 0644, true, null);
        }
        Set<String> seen = new HashSet<>();
        String after = "";
        int pages = 0;
        while (true) {
            MetaMessages.ReadDirReply page = root.readDir(dir, after, 300);
            for (DirEntry entry : page.entries()) {
                assertThat(seen.add(entry.name())).as("repeated %s", entry.name()).isTrue();
            }
            if (pages++ == 2) {
                // change the directory mid-listing: delete an entry already seen and one not yet seen, add a new one
                root.unlink(dir, "f00000");
                root.unlink(dir, "f02000");
                root.create(dir, "zzz-new", 0644, true, null);
            }
            if (!page.more()) {
                break;
            }
            after = page.entries().getLast().name();
        }
        for (int i = 1; i < 2500; i++) {
            if (i != 2000) {
                assertThat(seen).contains(String.format("f%05d", i));
            }
        }
        assertThat(seen).doesNotContain("f02000");
        assertThat(root.stat("/many").linkCount()).isEqualTo(2);
        // readdirplus: the same entries, each with its own attributes
        List<PlinthClient.Listed> listed = root.listWithAttributes("/many");
        assertThat(listed).hasSize(seen.size() - 2 + 1);
        for (PlinthClient.Listed entry : listed.subList(0, 50)) {
            assertThat(entry.attributes()).isEqualTo(root.getAttr(entry.entry().inodeId()));
            assertThat(entry.attributes().inodeId()).isEqualTo(entry.entry().inodeId());
        }
    }

    @Test
    void unlinkedOpenFileStaysReadableUntilClosed() {
        writeFile(root, "/open-then-unlink", "still here");
        try (PlinthFile open = root.open("/open-then-unlink", false)) {
            root.delete("/open-then-unlink");
            assertThat(root.exists("/open-then-unlink")).isFalse();
            ByteBuffer buffer = ByteBuffer.allocate(10);
            open.read(0, buffer);
            assertThat(new String(buffer.array(), StandardCharsets.UTF_8)).isEqualTo("still here");
            long inode = open.inodeId();
            assertThat(root.getAttr(inode).linkCount()).isZero();
        }
    }

    @Test
    void retriedChangeIsAppliedOnce() {
        root.mkdirs("/dedup", 0755);
        long parent = root.stat("/dedup").inodeId();
        MetaMessages.OpHeader header = new MetaMessages.OpHeader(sessionId(), 987_654, Credentials.ROOT, 0);
        var mkdir = new MetaMessages.Mkdir(header, parent, "once", 0755);
        var server = cluster.server();
        try (var connections = new dev.plinth.wire.RpcConnections(dev.plinth.wire.ClusterSecret.read(server.secretFile()), "dedup",
                MiniCluster.testConfig())) {
            var client = connections.get(server.rpcAddress());
            MetaMessages.AttributesReply first = client.request(mkdir);
            MetaMessages.AttributesReply second = client.request(mkdir);   // the same request id again
            assertThat(second.attributes().inodeId()).isEqualTo(first.attributes().inodeId());
            assertThat(root.list("/dedup")).hasSize(1);
            // a new request id is a new change
            fails(ErrorCode.ALREADY_EXISTS, () -> client.request(new MetaMessages.Mkdir(
                    new MetaMessages.OpHeader(header.clientId(), 987_655, Credentials.ROOT, 0), parent, "once", 0755)));
        }
    }

    private static long sessionId() {
        try (var connections = new dev.plinth.wire.RpcConnections(dev.plinth.wire.ClusterSecret.read(cluster.server().secretFile()),
                "session", MiniCluster.testConfig())) {
            MetaMessages.SessionReply reply = connections.get(cluster.server().rpcAddress()).request(
                    new MetaMessages.OpenSession(new MetaMessages.OpHeader(0, 0, Credentials.ROOT, 0), "dedup-test"));
            return reply.clientId();
        }
    }

    @Test
    void statFsReportsCapacityAndInodes() {
        MetaMessages.StatFsReply statFs = root.statFs();
        assertThat(statFs.capacityBytes()).isPositive();
        assertThat(statFs.freeBytes()).isPositive().isLessThanOrEqualTo(statFs.capacityBytes());
        assertThat(statFs.inodes()).isPositive();
    }

    @Test
    void truncateAndTimes() {
        writeFile(root, "/trunc", "0123456789");
        long inode = root.stat("/trunc").inodeId();
        try (PlinthFile file = root.open("/trunc", true)) {
            file.truncate(4);
        }
        assertThat(readFile(root, "/trunc")).isEqualTo("0123");
        try (PlinthFile file = root.open("/trunc", true)) {
            file.truncate(8);
        }
        assertThat(readFile(root, "/trunc")).isEqualTo("0123\0\0\0\0");
        root.setAttr(inode, MetaMessages.SET_ATIME | MetaMessages.SET_MTIME, 0, 0, 0, 0, 1_000_000_000L, 2_000_000_000L);
        assertThat(root.getAttr(inode).atimeNanos()).isEqualTo(1_000_000_000L);
        assertThat(root.getAttr(inode).mtimeNanos()).isEqualTo(2_000_000_000L);
        fails(ErrorCode.IS_A_DIRECTORY, () -> root.setAttr(InodeId.ROOT, MetaMessages.SET_SIZE, 0, 0, 0, 0, 0, 0));
    }
}
