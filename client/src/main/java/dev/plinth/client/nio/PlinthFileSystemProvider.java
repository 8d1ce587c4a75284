package dev.plinth.client.nio;

import dev.plinth.client.ClientOptions;
import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Names;
import dev.plinth.common.Permissions;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.HostPort;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MetaMessages.DirEntry;
import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.channels.SeekableByteChannel;
import java.nio.file.AccessDeniedException;
import java.nio.file.AccessMode;
import java.nio.file.CopyOption;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileStore;
import java.nio.file.FileSystem;
import java.nio.file.FileSystemAlreadyExistsException;
import java.nio.file.FileSystemNotFoundException;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributeView;
import java.nio.file.attribute.BasicFileAttributes;
import java.nio.file.attribute.FileAttribute;
import java.nio.file.attribute.FileAttributeView;
import java.nio.file.attribute.FileTime;
import java.nio.file.attribute.GroupPrincipal;
import java.nio.file.attribute.PosixFileAttributeView;
import java.nio.file.attribute.PosixFileAttributes;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.UserPrincipal;
import java.nio.file.spi.FileSystemProvider;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

/**
 * Plinth for java.nio: {@code Path.of(URI.create("plinth://127.0.0.1:7100/datasets/x"))} and then
 * Files.newByteChannel, Files.walk, Files.copy and friends. One file system per cluster address,
 * created on first use with the caller's uid/gid and the secret found as the CLI finds it; or
 * explicitly with {@link java.nio.file.FileSystems#newFileSystem(URI, Map)} and the env keys
 * {@code secretFile} (a path) and {@code config} (a {@link Config}). Thread-safe.
 */
public final class PlinthFileSystemProvider extends FileSystemProvider {
    public static final String SCHEME = "plinth";
    private final Map<String, PlinthFileSystem> fileSystems = new ConcurrentHashMap<>();

    @Override
    public String getScheme() {
        return SCHEME;
    }

    private static String authority(URI uri) {
        if (!SCHEME.equalsIgnoreCase(uri.getScheme()) || uri.getAuthority() == null) {
            throw new IllegalArgumentException("expected plinth://HOST:PORT/path, got " + uri);
        }
        return uri.getAuthority();
    }

    @Override
    public FileSystem newFileSystem(URI uri, Map<String, ?> env) throws IOException {
        String authority = authority(uri);
        synchronized (fileSystems) {
            if (fileSystems.containsKey(authority)) {
                throw new FileSystemAlreadyExistsException(authority);
            }
            return open(authority, env);
        }
    }

    private PlinthFileSystem open(String authority, Map<String, ?> env) throws IOException {
        HostPort server = HostPort.parse(authority);
        Object secretFile = env.get("secretFile");
        Object config = env.get("config");
        try {
            PlinthClient client = PlinthClient.connect(new ClientOptions(server,
                    ClientOptions.findSecret(server, secretFile == null ? null : secretFile.toString()),
                    ClientOptions.processCredentials(), config instanceof Config given ? given : Config.defaults(), "nio"));
            PlinthFileSystem fileSystem = new PlinthFileSystem(this, authority, client);
            fileSystems.put(authority, fileSystem);
            return fileSystem;
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, authority);
        }
    }

    void forget(PlinthFileSystem fileSystem) {
        fileSystems.remove(fileSystem.authority(), fileSystem);
    }

    @Override
    public FileSystem getFileSystem(URI uri) {
        PlinthFileSystem fileSystem = fileSystems.get(authority(uri));
        if (fileSystem == null) {
            throw new FileSystemNotFoundException(uri.toString());
        }
        return fileSystem;
    }

    @Override
    public Path getPath(URI uri) {
        String authority = authority(uri);
        PlinthFileSystem fileSystem;
        synchronized (fileSystems) {
            fileSystem = fileSystems.get(authority);
            if (fileSystem == null) {
                try {
                    fileSystem = open(authority, Map.of());
                } catch (IOException e) {
                    throw new FileSystemNotFoundException(uri + ": " + e.getMessage());
                }
            }
        }
        return fileSystem.getPath(uri.getPath() == null || uri.getPath().isEmpty() ? "/" : uri.getPath());
    }

    private static PlinthClient client(Path path) throws IOException {
        return PlinthPath.cast(path).getFileSystem().client();
    }

    private static String text(Path path) {
        return PlinthPath.cast(path).absolutePathString();
    }

    private static int modeOf(FileAttribute<?>[] attributes, int defaultMode) {
        for (FileAttribute<?> attribute : attributes) {
            if (attribute.name().equals("posix:permissions") && attribute.value() instanceof Set<?> set) {
                @SuppressWarnings("unchecked")
                Set<PosixFilePermission> permissions = (Set<PosixFilePermission>) set;
                return PlinthAttributes.mode(permissions);
            }
        }
        return defaultMode;
    }

    @Override
    public SeekableByteChannel newByteChannel(Path path, Set<? extends OpenOption> options, FileAttribute<?>... attributes) throws IOException {
        PlinthClient client = client(path);
        String name = text(path);
        boolean append = options.contains(StandardOpenOption.APPEND);
        boolean write = options.contains(StandardOpenOption.WRITE) || append;
        boolean read = options.contains(StandardOpenOption.READ) || !write;
        if (append && options.contains(StandardOpenOption.READ)) {
            throw new IllegalArgumentException("READ and APPEND together");
        }
        try {
            PlinthFile file;
            if (!write) {
                file = client.open(name, false);
            } else if (options.contains(StandardOpenOption.CREATE_NEW)) {
                file = client.create(name, modeOf(attributes, 0644), true, null);
            } else if (options.contains(StandardOpenOption.CREATE) && !client.exists(name)) {
                try {
                    file = client.create(name, modeOf(attributes, 0644), true, null);
                } catch (PlinthException e) {
                    if (e.code() != ErrorCode.ALREADY_EXISTS) {
                        throw e;
                    }
                    file = client.open(name, true); // created by someone else meanwhile
                }
            } else {
                file = client.open(name, true);
                if (options.contains(StandardOpenOption.TRUNCATE_EXISTING) && file.size() > 0) {
                    file.truncate(0);
                }
            }
            return new PlinthByteChannel(file, read, write, append);
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, path);
        }
    }

    @Override
    public DirectoryStream<Path> newDirectoryStream(Path directory, DirectoryStream.Filter<? super Path> filter) throws IOException {
        List<DirEntry> entries;
        try {
            entries = client(directory).list(text(directory));
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, directory);
        }
        return new DirectoryStream<>() {
            private boolean iterated;

            @Override
            public Iterator<Path> iterator() {
                if (iterated) {
                    throw new IllegalStateException("a directory stream iterates once");
                }
                iterated = true;
                return entries.stream().map(entry -> directory.resolve(entry.name())).filter(child -> {
                    try {
                        return filter.accept(child);
                    } catch (IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                }).iterator();
            }

            @Override
            public void close() {
            }
        };
    }

    @Override
    public void createDirectory(Path directory, FileAttribute<?>... attributes) throws IOException {
        try {
            client(directory).mkdir(text(directory), modeOf(attributes, 0755));
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, directory);
        }
    }

    @Override
    public void createSymbolicLink(Path link, Path target, FileAttribute<?>... attributes) throws IOException {
        try {
            client(link).symlink(text(link), target.toString());
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, link);
        }
    }

    @Override
    public void createLink(Path link, Path existing) throws IOException {
        try {
            client(link).link(text(existing), text(link));
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, link);
        }
    }

    @Override
    public Path readSymbolicLink(Path link) throws IOException {
        try {
            return link.getFileSystem().getPath(client(link).readLink(text(link)));
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, link);
        }
    }

    @Override
    public void delete(Path path) throws IOException {
        try {
            client(path).delete(text(path));
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, path);
        }
    }

    @Override
    public void copy(Path source, Path target, CopyOption... options) throws IOException {
        boolean replace = Arrays.asList(options).contains(StandardCopyOption.REPLACE_EXISTING);
        PlinthClient client = client(source);
        try {
            Attributes attributes = client.stat(text(source));
            if (client.exists(text(target))) {
                if (!replace) {
                    throw new FileAlreadyExistsException(target.toString());
                }
                client.delete(text(target));
            }
            if (attributes.isDirectory()) {
                client.mkdir(text(target), attributes.mode() & 07777);
                return;
            }
            try (PlinthFile in = client.open(text(source), false);
                 PlinthFile out = client(target).create(text(target), attributes.mode() & 07777, true, null)) {
                ByteBuffer buffer = ByteBuffer.allocate(1 << 20);
                long offset = 0;
                int read;
                while ((read = in.read(offset, buffer.clear())) > 0) {
                    out.write(offset, buffer.flip());
                    offset += read;
                }
            }
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, source);
        }
    }

    @Override
    public void move(Path source, Path target, CopyOption... options) throws IOException {
        boolean replace = Arrays.asList(options).contains(StandardCopyOption.REPLACE_EXISTING);
        try {
            PlinthClient client = client(source);
            String from = text(source);
            String to = text(target);
            client.rename(client.stat(Names.parent(from)).inodeId(), Names.lastName(from),
                    client.stat(Names.parent(to)).inodeId(), Names.lastName(to), !replace);
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, source);
        }
    }

    @Override
    public boolean isSameFile(Path first, Path second) throws IOException {
        if (first.equals(second)) {
            return true;
        }
        if (!(second instanceof PlinthPath) || first.getFileSystem() != second.getFileSystem()) {
            return false;
        }
        try {
            return client(first).stat(text(first)).inodeId() == client(second).stat(text(second)).inodeId();
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, first);
        }
    }

    @Override
    public boolean isHidden(Path path) {
        Path name = path.getFileName();
        return name != null && name.toString().startsWith(".");
    }

    @Override
    public FileStore getFileStore(Path path) {
        return new PlinthFileSystem.PlinthFileStore(PlinthPath.cast(path).getFileSystem());
    }

    @Override
    public void checkAccess(Path path, AccessMode... modes) throws IOException {
        PlinthClient client = client(path);
        Attributes attributes;
        try {
            attributes = client.stat(text(path));
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, path);
        }
        for (AccessMode mode : modes) {
            int needed = switch (mode) {
                case READ -> Permissions.READ;
                case WRITE -> Permissions.WRITE;
                case EXECUTE -> Permissions.EXECUTE;
            };
            if (!Permissions.allowed(client.options().credentials(), attributes.mode(), attributes.uid(), attributes.gid(),
                    attributes.isDirectory(), needed)) {
                throw new AccessDeniedException(path.toString());
            }
        }
    }

    private static Attributes attributes(Path path, LinkOption... options) throws IOException {
        boolean follow = !Arrays.asList(options).contains(LinkOption.NOFOLLOW_LINKS);
        try {
            PlinthClient client = client(path);
            return follow ? client.stat(text(path)) : client.lstat(text(path));
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, path);
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public <A extends BasicFileAttributes> A readAttributes(Path path, Class<A> type, LinkOption... options) throws IOException {
        if (type != BasicFileAttributes.class && type != PosixFileAttributes.class) {
            throw new UnsupportedOperationException("attributes " + type.getSimpleName());
        }
        return (A) new PlinthAttributes(attributes(path, options));
    }

    @Override
    public Map<String, Object> readAttributes(Path path, String attributes, LinkOption... options) throws IOException {
        PlinthAttributes read = new PlinthAttributes(attributes(path, options));
        String view = attributes.contains(":") ? attributes.substring(0, attributes.indexOf(':')) : "basic";
        String names = attributes.contains(":") ? attributes.substring(attributes.indexOf(':') + 1) : attributes;
        if (!view.equals("basic") && !view.equals("posix")) {
            throw new UnsupportedOperationException("attribute view " + view);
        }
        Map<String, Object> all = new LinkedHashMap<>();
        all.put("lastModifiedTime", read.lastModifiedTime());
        all.put("lastAccessTime", read.lastAccessTime());
        all.put("creationTime", read.creationTime());
        all.put("size", read.size());
        all.put("isRegularFile", read.isRegularFile());
        all.put("isDirectory", read.isDirectory());
        all.put("isSymbolicLink", read.isSymbolicLink());
        all.put("isOther", false);
        all.put("fileKey", read.fileKey());
        if (view.equals("posix")) {
            all.put("owner", read.owner());
            all.put("group", read.group());
            all.put("permissions", read.permissions());
        }
        if (names.equals("*")) {
            return all;
        }
        Map<String, Object> selected = new LinkedHashMap<>();
        for (String name : names.split(",")) {
            if (!all.containsKey(name)) {
                throw new IllegalArgumentException("unknown attribute " + name);
            }
            selected.put(name, all.get(name));
        }
        return selected;
    }

    @Override
    public void setAttribute(Path path, String attribute, Object value, LinkOption... options) throws IOException {
        String name = attribute.contains(":") ? attribute.substring(attribute.indexOf(':') + 1) : attribute;
        PosixFileAttributeView view = getFileAttributeView(path, PosixFileAttributeView.class, options);
        switch (name) {
            case "lastModifiedTime" -> view.setTimes((FileTime) value, null, null);
            case "lastAccessTime" -> view.setTimes(null, (FileTime) value, null);
            case "permissions" -> {
                @SuppressWarnings("unchecked")
                Set<PosixFilePermission> permissions = (Set<PosixFilePermission>) value;
                view.setPermissions(permissions);
            }
            default -> throw new UnsupportedOperationException("cannot set attribute " + attribute);
        }
    }

    @Override
    @SuppressWarnings("unchecked")
    public <V extends FileAttributeView> V getFileAttributeView(Path path, Class<V> type, LinkOption... options) {
        if (type != BasicFileAttributeView.class && type != PosixFileAttributeView.class) {
            return null;
        }
        return (V) new PosixFileAttributeView() {
            @Override
            public String name() {
                return "posix";
            }

            @Override
            public PosixFileAttributes readAttributes() throws IOException {
                return PlinthFileSystemProvider.this.readAttributes(path, PosixFileAttributes.class, options);
            }

            @Override
            public void setTimes(FileTime lastModifiedTime, FileTime lastAccessTime, FileTime createTime) throws IOException {
                int mask = (lastModifiedTime == null ? 0 : MetaMessages.SET_MTIME) | (lastAccessTime == null ? 0 : MetaMessages.SET_ATIME);
                if (mask == 0) {
                    return;
                }
                setAttributes(path, mask, 0, lastAccessTime == null ? 0 : lastAccessTime.to(TimeUnit.NANOSECONDS),
                        lastModifiedTime == null ? 0 : lastModifiedTime.to(TimeUnit.NANOSECONDS));
            }

            @Override
            public void setPermissions(Set<PosixFilePermission> permissions) throws IOException {
                setAttributes(path, MetaMessages.SET_MODE, PlinthAttributes.mode(permissions), 0, 0);
            }

            @Override
            public UserPrincipal getOwner() throws IOException {
                return readAttributes().owner();
            }

            @Override
            public void setOwner(UserPrincipal owner) {
                throw new UnsupportedOperationException("set owners with the CLI or FUSE (numeric ids)");
            }

            @Override
            public void setGroup(GroupPrincipal group) {
                throw new UnsupportedOperationException("set groups with the CLI or FUSE (numeric ids)");
            }
        };
    }

    private static void setAttributes(Path path, int mask, int mode, long atimeNanos, long mtimeNanos) throws IOException {
        try {
            PlinthClient client = client(path);
            client.setAttr(client.stat(text(path)).inodeId(), mask, mode, 0, 0, 0, atimeNanos, mtimeNanos);
        } catch (PlinthException e) {
            throw Exceptions.toIOException(e, path);
        }
    }
}
