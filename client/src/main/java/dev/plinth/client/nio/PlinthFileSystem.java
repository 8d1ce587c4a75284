package dev.plinth.client.nio;

import dev.plinth.client.PlinthClient;
import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.FileSystem;
import java.nio.file.FileSystems;
import java.nio.file.Path;
import java.nio.file.PathMatcher;
import java.nio.file.WatchService;
import java.nio.file.attribute.FileAttributeView;
import java.nio.file.attribute.FileStoreAttributeView;
import java.nio.file.attribute.UserPrincipalLookupService;
import java.util.List;
import java.util.Set;

/** One Plinth cluster as a java.nio FileSystem, over one {@link PlinthClient}. Thread-safe. */
final class PlinthFileSystem extends FileSystem {
    private final PlinthFileSystemProvider provider;
    private final String authority;
    private final PlinthClient client;
    private volatile boolean open = true;

    PlinthFileSystem(PlinthFileSystemProvider provider, String authority, PlinthClient client) {
        this.provider = provider;
        this.authority = authority;
        this.client = client;
    }

    PlinthClient client() throws IOException {
        if (!open) {
            throw new java.nio.file.ClosedFileSystemException();
        }
        return client;
    }

    String authority() {
        return authority;
    }

    @Override
    public PlinthFileSystemProvider provider() {
        return provider;
    }

    @Override
    public void close() {
        if (open) {
            open = false;
            provider.forget(this);
            client.close();
        }
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public boolean isReadOnly() {
        return false;
    }

    @Override
    public String getSeparator() {
        return "/";
    }

    @Override
    public Iterable<Path> getRootDirectories() {
        return List.of(getPath("/"));
    }

    @Override
    public Iterable<FileStore> getFileStores() {
        return List.of(new PlinthFileStore(this));
    }

    @Override
    public Set<String> supportedFileAttributeViews() {
        return Set.of("basic", "posix");
    }

    @Override
    public Path getPath(String first, String... more) {
        StringBuilder text = new StringBuilder(first);
        for (String part : more) {
            text.append('/').append(part);
        }
        return PlinthPath.parse(this, text.toString());
    }

    /** glob: and regex: as the default file system reads them, applied to the path's string form. */
    @Override
    public PathMatcher getPathMatcher(String syntaxAndPattern) {
        PathMatcher matcher = FileSystems.getDefault().getPathMatcher(syntaxAndPattern);
        return path -> matcher.matches(java.nio.file.Path.of(path.toString()));
    }

    @Override
    public UserPrincipalLookupService getUserPrincipalLookupService() {
        throw new UnsupportedOperationException("no user principal lookup");
    }

    @Override
    public WatchService newWatchService() {
        throw new UnsupportedOperationException("plinth file systems have no watch service");
    }

    /** The whole cluster as one store, with statfs figures. */
    static final class PlinthFileStore extends FileStore {
        private final PlinthFileSystem fileSystem;

        PlinthFileStore(PlinthFileSystem fileSystem) {
            this.fileSystem = fileSystem;
        }

        @Override
        public String name() {
            return "plinth://" + fileSystem.authority();
        }

        @Override
        public String type() {
            return "plinth";
        }

        @Override
        public boolean isReadOnly() {
            return false;
        }

        @Override
        public long getTotalSpace() throws IOException {
            return fileSystem.client().statFs().capacityBytes();
        }

        @Override
        public long getUsableSpace() throws IOException {
            return fileSystem.client().statFs().freeBytes();
        }

        @Override
        public long getUnallocatedSpace() throws IOException {
            return getUsableSpace();
        }

        @Override
        public boolean supportsFileAttributeView(Class<? extends FileAttributeView> type) {
            return type == java.nio.file.attribute.BasicFileAttributeView.class || type == java.nio.file.attribute.PosixFileAttributeView.class;
        }

        @Override
        public boolean supportsFileAttributeView(String name) {
            return name.equals("basic") || name.equals("posix");
        }

        @Override
        public <V extends FileStoreAttributeView> V getFileStoreAttributeView(Class<V> type) {
            return null;
        }

        @Override
        public Object getAttribute(String attribute) {
            throw new UnsupportedOperationException("no file store attribute " + attribute);
        }
    }
}
