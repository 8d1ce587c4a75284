package dev.plinth.meta.store;

import org.rocksdb.RocksDB;
import org.rocksdb.util.Environment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.net.JarURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.List;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.zip.CRC32;
import java.util.zip.CheckedInputStream;

/**
 * Loads RocksDB's JNI library from one extracted copy per library build. RocksJava's own loader
 * extracts its 17 MB library to a new file in the temporary directory in every process and
 * removes it only at a clean exit, so each killed MDT process left one behind until the disk
 * filled. Here the copy lives in a directory only this user can write, named by the jar entry's
 * size and CRC, and every later process loads the same file. Anything unexpected (no jar, a
 * directory someone else owns) falls back to RocksJava's loader.
 */
final class RocksLibrary {
    private static final Logger LOG = LoggerFactory.getLogger(RocksLibrary.class);
    private static final Set<PosixFilePermission> OWNER_ONLY = PosixFilePermissions.fromString("rwx------");

    private RocksLibrary() {}

    static void load() {
        try {
            Path directory = extracted();
            RocksDB.loadLibrary(List.of(directory.toString()));
        } catch (IOException | RuntimeException | UnsatisfiedLinkError e) {
            LOG.warn("RocksDB's library is loaded by RocksJava, which leaves a copy in the temporary directory if the process is killed: {}",
                    e.toString());
            RocksDB.loadLibrary();
        }
    }

    /** The directory holding this build's library, extracting it there first if no process has yet. */
    private static Path extracted() throws IOException {
        String name = Environment.getJniLibraryFileName("rocksdb");
        // RocksDB.loadLibrary(paths) looks in each path for this name ("librocksdbjnijni-linux64.so"), not the jar entry's
        String loadedName = Environment.getJniLibraryFileName("rocksdbjni");
        URL resource = RocksDB.class.getClassLoader().getResource(name);
        if (resource == null) {
            throw new IOException("no " + name + " beside RocksDB's classes");
        }
        URLConnection connection = resource.openConnection();
        if (!(connection instanceof JarURLConnection jar)) {
            throw new IOException(name + " is not in a jar");
        }
        JarEntry entry = jar.getJarEntry();
        if (entry.getSize() < 0 || entry.getCrc() < 0) {
            throw new IOException(name + " has no recorded size or CRC");
        }
        Path directory = privateDirectory().resolve("rocksdbjni-" + entry.getSize() + "-" + Long.toHexString(entry.getCrc()));
        Path library = directory.resolve(loadedName);
        if (Files.isRegularFile(library, LinkOption.NOFOLLOW_LINKS) && Files.size(library) == entry.getSize()) {
            return directory;
        }
        Files.createDirectories(directory);
        Path partial = Files.createTempFile(directory, loadedName, ".partial");
        try {
            CRC32 crc = new CRC32();
            try (InputStream in = new CheckedInputStream(jar.getInputStream(), crc)) {
                Files.copy(in, partial, StandardCopyOption.REPLACE_EXISTING);
            }
            if (crc.getValue() != entry.getCrc() || Files.size(partial) != entry.getSize()) {
                throw new IOException(name + " read from its jar does not match the jar's CRC");
            }
            try {
                Files.move(partial, library, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException(e);
            }
        } finally {
            Files.deleteIfExists(partial);
        }
        return directory;
    }

    /** {@code TMPDIR/plinth-USER}, created owner-only; refused when it exists but is a link, another user's or open to others. */
    private static Path privateDirectory() throws IOException {
        String user = System.getProperty("user.name");
        Path directory = Path.of(System.getProperty("java.io.tmpdir"), "plinth-" + user);
        if (Files.notExists(directory, LinkOption.NOFOLLOW_LINKS)) {
            try {
                Files.createDirectory(directory, PosixFilePermissions.asFileAttribute(OWNER_ONLY));
            } catch (java.nio.file.FileAlreadyExistsException e) {
                // another process made it: checked below like any existing one
            }
        }
        UserPrincipal me = directory.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(user);
        if (!Files.isDirectory(directory, LinkOption.NOFOLLOW_LINKS)
                || !Files.getOwner(directory, LinkOption.NOFOLLOW_LINKS).equals(me)
                || !Files.getPosixFilePermissions(directory, LinkOption.NOFOLLOW_LINKS).equals(OWNER_ONLY)) {
            throw new IOException(directory + " is not a directory of " + user + "'s alone");
        }
        return directory;
    }
}
