package dev.plinth.client.nio;

import static java.util.Objects.requireNonNull;

import java.net.URI;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.ProviderMismatchException;
import java.nio.file.WatchEvent;
import java.nio.file.WatchKey;
import java.nio.file.WatchService;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/** A path in a Plinth file system: "/"-separated names, absolute when it starts with "/". Immutable. */
final class PlinthPath implements Path {
    private final PlinthFileSystem fileSystem;
    private final boolean absolute;
    private final List<String> names;

    PlinthPath(PlinthFileSystem fileSystem, boolean absolute, List<String> names) {
        this.fileSystem = requireNonNull(fileSystem, "fileSystem is null");
        this.absolute = absolute;
        this.names = List.copyOf(names);
    }

    static PlinthPath parse(PlinthFileSystem fileSystem, String text) {
        List<String> names = new ArrayList<>();
        for (String name : text.split("/")) {
            if (!name.isEmpty()) {
                names.add(name);
            }
        }
        return new PlinthPath(fileSystem, text.startsWith("/"), names);
    }

    /** The absolute path string the client API takes. */
    String absolutePathString() {
        return toAbsolutePath().toString();
    }

    static PlinthPath cast(Path path) {
        if (!(path instanceof PlinthPath plinth)) {
            throw new ProviderMismatchException("not a plinth path: " + path);
        }
        return plinth;
    }

    @Override
    public PlinthFileSystem getFileSystem() {
        return fileSystem;
    }

    @Override
    public boolean isAbsolute() {
        return absolute;
    }

    @Override
    public Path getRoot() {
        return absolute ? new PlinthPath(fileSystem, true, List.of()) : null;
    }

    @Override
    public Path getFileName() {
        return names.isEmpty() ? null : new PlinthPath(fileSystem, false, List.of(names.getLast()));
    }

    @Override
    public Path getParent() {
        if (names.isEmpty() || (names.size() == 1 && !absolute)) {
            return null;
        }
        return new PlinthPath(fileSystem, absolute, names.subList(0, names.size() - 1));
    }

    @Override
    public int getNameCount() {
        return names.size();
    }

    @Override
    public Path getName(int index) {
        return new PlinthPath(fileSystem, false, List.of(names.get(index)));
    }

    @Override
    public Path subpath(int beginIndex, int endIndex) {
        if (beginIndex < 0 || endIndex > names.size() || beginIndex >= endIndex) {
            throw new IllegalArgumentException("bad subpath " + beginIndex + ".." + endIndex);
        }
        return new PlinthPath(fileSystem, false, names.subList(beginIndex, endIndex));
    }

    @Override
    public boolean startsWith(Path other) {
        if (!(other instanceof PlinthPath that) || that.absolute != absolute || that.names.size() > names.size()) {
            return false;
        }
        return names.subList(0, that.names.size()).equals(that.names);
    }

    @Override
    public boolean endsWith(Path other) {
        if (!(other instanceof PlinthPath that) || (that.absolute && !absolute) || that.names.size() > names.size()) {
            return false;
        }
        if (that.absolute) {
            return equals(that);
        }
        return names.subList(names.size() - that.names.size(), names.size()).equals(that.names);
    }

    @Override
    public Path normalize() {
        List<String> result = new ArrayList<>();
        for (String name : names) {
            if (name.equals(".")) {
                continue;
            }
            if (name.equals("..") && !result.isEmpty() && !result.getLast().equals("..")) {
                result.removeLast();
            } else if (!(name.equals("..") && absolute)) {
                result.add(name);
            }
        }
        return new PlinthPath(fileSystem, absolute, result);
    }

    @Override
    public Path resolve(Path other) {
        PlinthPath that = cast(other);
        if (that.absolute) {
            return that;
        }
        List<String> joined = new ArrayList<>(names);
        joined.addAll(that.names);
        return new PlinthPath(fileSystem, absolute, joined);
    }

    @Override
    public Path resolve(String other) {
        return resolve(parse(fileSystem, other));
    }

    @Override
    public Path relativize(Path other) {
        PlinthPath that = cast(other);
        if (that.absolute != absolute) {
            throw new IllegalArgumentException("cannot relativize between absolute and relative paths");
        }
        int common = 0;
        while (common < names.size() && common < that.names.size() && names.get(common).equals(that.names.get(common))) {
            common++;
        }
        List<String> result = new ArrayList<>();
        for (int i = common; i < names.size(); i++) {
            result.add("..");
        }
        result.addAll(that.names.subList(common, that.names.size()));
        return new PlinthPath(fileSystem, false, result);
    }

    @Override
    public URI toUri() {
        return URI.create(PlinthFileSystemProvider.SCHEME + "://" + fileSystem.authority()
                + new PlinthPath(fileSystem, true, ((PlinthPath) toAbsolutePath()).names).toString().replace(" ", "%20"));
    }

    @Override
    public Path toAbsolutePath() {
        return absolute ? this : new PlinthPath(fileSystem, true, names);
    }

    @Override
    public Path toRealPath(LinkOption... options) throws java.io.IOException {
        PlinthPath normalized = (PlinthPath) toAbsolutePath().normalize();
        fileSystem.provider().checkAccess(normalized);
        return normalized;
    }

    @Override
    public WatchKey register(WatchService watcher, WatchEvent.Kind<?>[] events, WatchEvent.Modifier... modifiers) {
        throw new UnsupportedOperationException("plinth file systems have no watch service");
    }

    @Override
    public int compareTo(Path other) {
        return toString().compareTo(other.toString());
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof PlinthPath that && that.fileSystem == fileSystem && that.absolute == absolute && that.names.equals(names);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(new Object[] {absolute, names});
    }

    @Override
    public String toString() {
        String joined = String.join("/", names);
        return absolute ? "/" + joined : joined;
    }
}
