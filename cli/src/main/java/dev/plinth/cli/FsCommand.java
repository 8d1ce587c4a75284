package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileType;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Sizes;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.time.ZoneId;
import java.time.format.DateTimeFormatter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/** File verbs over the native client. Paths in the cluster are absolute. */
@Command(name = "fs", mixinStandardHelpOptions = true, description = "Files and directories in the cluster.",
        subcommands = {FsCommand.Ls.class, FsCommand.Mkdir.class, FsCommand.Put.class, FsCommand.Get.class, FsCommand.Cat.class,
                FsCommand.Stat.class, FsCommand.Rm.class, FsCommand.Mv.class})
final class FsCommand {
    private static final int IO_BYTES = 1 << 20;
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm").withZone(ZoneId.systemDefault());

    private FsCommand() {}

    static String modeString(Attributes attributes) {
        char type = switch (attributes.type()) {
            case DIRECTORY -> 'd';
            case SYMLINK -> 'l';
            case FILE -> '-';
            case FIFO -> 'p';
            case CHARACTER_DEVICE -> 'c';
            case BLOCK_DEVICE -> 'b';
            case SOCKET -> 's';
        };
        StringBuilder text = new StringBuilder().append(type);
        String letters = "rwxrwxrwx";
        for (int i = 0; i < 9; i++) {
            text.append((attributes.mode() & (1 << (8 - i))) != 0 ? letters.charAt(i) : '-');
        }
        return text.toString();
    }

    static String join(String directory, String name) {
        return directory.endsWith("/") ? directory + name : directory + "/" + name;
    }

    @Command(name = "ls", mixinStandardHelpOptions = true, description = "List a directory (or show one file).")
    static final class Ls implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "-l", description = "Long format: mode, links, owner, size, time.")
        boolean longFormat;

        @Parameters(paramLabel = "PATH", defaultValue = "/")
        String path;

        @Override
        public Integer call() {
            try (PlinthClient plinth = client.connect()) {
                Attributes target = plinth.stat(path);
                if (!target.isDirectory()) {
                    print(plinth, path, path.substring(path.lastIndexOf('/') + 1), target);
                    return 0;
                }
                if (longFormat) {
                    for (PlinthClient.Listed listed : plinth.listWithAttributes(path)) {
                        print(plinth, join(path, listed.entry().name()), listed.entry().name(), listed.attributes());
                    }
                } else {
                    for (DirEntry entry : plinth.list(path)) {
                        print(plinth, join(path, entry.name()), entry.name(), null);
                    }
                }
            }
            return 0;
        }

        private void print(PlinthClient plinth, String fullPath, String name, Attributes attributes) {
            if (!longFormat || attributes == null) {
                System.out.println(name);
                return;
            }
            String suffix = attributes.type() == FileType.SYMLINK ? " -> " + plinth.readLink(fullPath) : "";
            System.out.printf("%s %3d %5d %5d %12d %s %s%s%n", modeString(attributes), attributes.linkCount(), attributes.uid(),
                    attributes.gid(), attributes.sizeBytes(), TIME.format(Instant.ofEpochSecond(0, attributes.mtimeNanos())), name, suffix);
        }
    }

    @Command(name = "mkdir", mixinStandardHelpOptions = true, description = "Create a directory.")
    static final class Mkdir implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "-p", description = "Create missing parents; an existing directory is not an error.")
        boolean parents;

        @Option(names = "-m", paramLabel = "MODE", description = "Permission bits in octal (default 755).", defaultValue = "755")
        String mode;

        @Option(names = {"-i", "--mdt"}, paramLabel = "N", description = "Put the directory on MDT N (as `lfs mkdir -i N`): its entries, "
                + "and what is made below it, live there. Default: its parent's MDT. With -p, only the last directory.")
        Integer mdt;

        @Parameters(paramLabel = "PATH")
        String path;

        @Override
        public Integer call() {
            try (PlinthClient plinth = client.connect()) {
                int bits = Integer.parseInt(mode, 8);
                int placement = mdt == null ? dev.plinth.wire.messages.MetaMessages.Mkdir.WITH_PARENT : mdt;
                if (mdt != null && mdt < 0) {
                    throw new picocli.CommandLine.ParameterException(new picocli.CommandLine(this), "--mdt must be 0 or more");
                }
                if (parents) {
                    plinth.mkdirs(path, bits, placement);
                } else {
                    plinth.mkdir(path, bits, placement);
                }
            }
            return 0;
        }
    }

    @Command(name = "put", mixinStandardHelpOptions = true, description = "Copy a local file (or - for stdin) into the cluster.")
    static final class Put implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Parameters(index = "0", paramLabel = "LOCAL")
        String local;

        @Parameters(index = "1", paramLabel = "PATH", description = "Destination; an existing directory receives the file under its own name.")
        String path;

        @Override
        public Integer call() throws IOException {
            if (!local.equals("-") && Files.isDirectory(Path.of(local))) {
                throw new IOException(local + " is a directory: put copies one file");
            }
            try (PlinthClient plinth = client.connect()) {
                String destination = path;
                if (plinth.exists(path) && plinth.stat(path).isDirectory()) {
                    destination = join(path, Path.of(local).getFileName().toString());
                }
                // written without a name and named once complete: a failure (a missing or unreadable source, a full
                // cluster) leaves nothing behind, and readers never see half a file
                long size = local.equals("-") ? -1 : Files.size(Path.of(local));
                Attributes directory = plinth.stat(dev.plinth.common.Names.parent(destination));
                try (InputStream in = local.equals("-") ? System.in : Files.newInputStream(Path.of(local));
                     PlinthFile file = plinth.createUnnamed(directory.inodeId(), 0644, null);
                     Progress progress = new Progress("put " + destination, size)) {
                    byte[] buffer = new byte[IO_BYTES];
                    long offset = 0;
                    int read;
                    while ((read = in.readNBytes(buffer, 0, buffer.length)) > 0) {
                        file.write(offset, ByteBuffer.wrap(buffer, 0, read));
                        offset += read;
                        progress.advance(read);
                    }
                    file.publish(directory.inodeId(), null, dev.plinth.common.Names.lastName(destination), false,
                            System.currentTimeMillis() * 1_000_000L, java.util.List.of());
                }
            }
            return 0;
        }
    }

    @Command(name = "get", mixinStandardHelpOptions = true, description = "Copy a file from the cluster to a local file (or - for stdout).")
    static final class Get implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Parameters(index = "0", paramLabel = "PATH")
        String path;

        @Parameters(index = "1", paramLabel = "LOCAL")
        Path local;

        @Override
        public Integer call() throws IOException {
            try (PlinthClient plinth = client.connect(); PlinthFile file = plinth.open(path, false)) {
                if (local.toString().equals("-")) {
                    toStdout(file); // as put reads - as stdin (it had made a file named "-")
                    return 0;
                }
                Path target = Files.isDirectory(local) ? local.resolve(Path.of(path).getFileName().toString()) : local;
                try (FileChannel out = FileChannel.open(target, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                        StandardOpenOption.TRUNCATE_EXISTING);
                     Progress progress = new Progress("get " + path, file.size())) {
                    copy(file, buffer -> {
                        progress.advance(buffer.remaining());
                        while (buffer.hasRemaining()) {
                            out.write(buffer);
                        }
                    });
                }
            }
            return 0;
        }
    }

    @Command(name = "cat", mixinStandardHelpOptions = true, description = "Write a file's bytes to stdout.")
    static final class Cat implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Parameters(paramLabel = "PATH")
        String path;

        @Override
        public Integer call() throws IOException {
            try (PlinthClient plinth = client.connect(); PlinthFile file = plinth.open(path, false)) {
                toStdout(file);
            }
            return 0;
        }
    }

    /**
     * Copies the file to stdout; stops when the reader has gone (as in {@code plinth fs cat F | head}):
     * System.out never throws, so the copy would otherwise read the rest of the file for nobody.
     */
    private static void toStdout(PlinthFile file) throws IOException {
        java.io.PrintStream out = System.out;
        try {
            copy(file, buffer -> {
                out.write(buffer.array(), buffer.arrayOffset() + buffer.position(), buffer.remaining());
                if (out.checkError()) {
                    throw new ReaderGone();
                }
            });
        } catch (ReaderGone e) {
            return; // like cat on a closed pipe, but without a message
        }
        out.flush();
    }

    /** stdout's reader closed the pipe. */
    private static final class ReaderGone extends IOException {
        ReaderGone() {
            super("stdout's reader has gone");
        }
    }

    static void copy(PlinthFile file, PlinthFile.BlockSink sink) throws IOException {
        file.readAll(IO_BYTES, sink);
    }

    @Command(name = "stat", mixinStandardHelpOptions = true, description = "Show a path's attributes.")
    static final class Stat implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Parameters(paramLabel = "PATH")
        String path;

        @Option(names = "--json", description = "Print as JSON, with a regular file's HSM fields (as plinth hsm state --json).")
        boolean json;

        @Override
        public Integer call() {
            try (PlinthClient plinth = client.connect()) {
                Attributes attributes = plinth.lstat(path);
                if (json) {
                    java.util.Map<String, Object> out = new java.util.LinkedHashMap<>();
                    out.put("path", path);
                    out.put("inode", String.format("%016x", attributes.inodeId()));
                    out.put("type", attributes.type().name().toLowerCase(java.util.Locale.ROOT));
                    out.put("size", attributes.sizeBytes());
                    out.put("mode", String.format("%04o", attributes.mode() & 07777));
                    out.put("links", attributes.linkCount());
                    out.put("uid", attributes.uid());
                    out.put("gid", attributes.gid());
                    out.put("atime", Instant.ofEpochSecond(0, attributes.atimeNanos()).toString());
                    out.put("mtime", Instant.ofEpochSecond(0, attributes.mtimeNanos()).toString());
                    out.put("ctime", Instant.ofEpochSecond(0, attributes.ctimeNanos()).toString());
                    if (attributes.type() == dev.plinth.common.FileType.FILE) {
                        java.util.Map<String, Object> hsm = HsmCommand.describe(path, plinth.hsm().state(attributes.inodeId()));
                        hsm.remove("path");
                        out.put("hsm", hsm);
                    }
                    System.out.println(dev.plinth.common.Json.write(out));
                    return 0;
                }
                System.out.printf("  path: %s%n", path);
                System.out.printf(" inode: %016x%n", attributes.inodeId());
                System.out.printf("  type: %s%n", attributes.type().name().toLowerCase(java.util.Locale.ROOT));
                System.out.printf("  size: %d (%s)%n", attributes.sizeBytes(), Sizes.format(attributes.sizeBytes()));
                System.out.printf("  mode: %04o %s%n", attributes.mode() & 07777, modeString(attributes));
                System.out.printf(" links: %d%n", attributes.linkCount());
                System.out.printf("   uid: %d   gid: %d%n", attributes.uid(), attributes.gid());
                System.out.printf(" atime: %s%n", Instant.ofEpochSecond(0, attributes.atimeNanos()));
                System.out.printf(" mtime: %s%n", Instant.ofEpochSecond(0, attributes.mtimeNanos()));
                System.out.printf(" ctime: %s%n", Instant.ofEpochSecond(0, attributes.ctimeNanos()));
            }
            return 0;
        }
    }

    @Command(name = "rm", mixinStandardHelpOptions = true, description = "Remove a file, symlink or empty directory.")
    static final class Rm implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Option(names = "-r", description = "Remove a directory and everything below it.")
        boolean recursive;

        @Parameters(paramLabel = "PATH")
        String path;

        @Override
        public Integer call() {
            try (PlinthClient plinth = client.connect()) {
                if (recursive) {
                    removeTree(plinth, path, 0);
                } else {
                    plinth.delete(path);
                }
            }
            return 0;
        }

        private static void removeTree(PlinthClient plinth, String path, int depth) {
            if (depth > 4096) {
                throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "directory tree too deep");
            }
            if (plinth.lstat(path).isDirectory()) {
                for (DirEntry entry : plinth.list(path)) {
                    removeTree(plinth, join(path, entry.name()), depth + 1);
                }
            }
            plinth.delete(path);
        }
    }

    @Command(name = "mv", mixinStandardHelpOptions = true, description = "Rename or move; replaces a destination file or empty directory atomically.")
    static final class Mv implements Callable<Integer> {
        @Mixin
        ClientMixin client;

        @Parameters(index = "0", paramLabel = "SOURCE")
        String source;

        @Parameters(index = "1", paramLabel = "TARGET")
        String target;

        @Override
        public Integer call() {
            try (PlinthClient plinth = client.connect()) {
                String destination = target;
                if (plinth.exists(target) && plinth.stat(target).isDirectory() && !plinth.lstat(source).isDirectory()) {
                    destination = join(target, source.substring(source.lastIndexOf('/') + 1));
                }
                plinth.rename(source, destination);
            }
            return 0;
        }
    }
}
