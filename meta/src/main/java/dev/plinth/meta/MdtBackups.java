package dev.plinth.meta;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.FileTrees;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.BackupMessages;
import dev.plinth.wire.messages.BackupMessages.BackupFile;
import dev.plinth.wire.messages.BackupMessages.MdtBackup;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The copies of an MDT's store that backups read out: each a RocksDB checkpoint in
 * {@code backups/ID} beside the store (hard links to its table files, so a copy costs little
 * space until compaction replaces the files it links). A copy is removed when its backup ends,
 * or an hour after it was made if the backup tool went away.
 */
final class MdtBackups {
    private static final Logger LOG = LoggerFactory.getLogger(MdtBackups.class);
    static final long ABANDONED_AFTER_MILLIS = TimeUnit.HOURS.toMillis(1);
    private static final Pattern ID = Pattern.compile("[0-9]{13}-[0-9a-f]{8}");
    private static final Pattern FILE_NAME = Pattern.compile("[A-Za-z0-9._-]{1,255}");

    private final MetaStateMachine stateMachine;
    private final Path directory;

    MdtBackups(MetaStateMachine stateMachine) {
        this.stateMachine = stateMachine;
        this.directory = stateMachine.storeDirectory().resolveSibling("backups");
    }

    MdtBackup start() {
        removeAbandoned(System.currentTimeMillis());
        String id = System.currentTimeMillis() + "-" + String.format("%08x", ThreadLocalRandom.current().nextInt());
        Path copy = directory.resolve(id);
        try {
            Files.createDirectories(directory);
            long applied = stateMachine.checkpoint(copy);
            List<BackupFile> files = new ArrayList<>();
            try (Stream<Path> listing = Files.list(copy)) {
                for (Path file : listing.sorted().toList()) {
                    if (Files.isRegularFile(file)) {
                        files.add(new BackupFile(file.getFileName().toString(), Files.size(file)));
                    }
                }
            }
            LOG.info("MDT {} store copied for a backup ({}, {} files, through index {} at least)", stateMachine.mdtIndex(), id, files.size(), applied);
            return new MdtBackup(id, stateMachine.mdtIndex(), applied, files);
        } catch (IOException e) {
            delete(copy);
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot copy the MDT's store for a backup: " + e.getMessage(), e);
        } catch (RuntimeException e) {
            delete(copy);
            throw e;
        }
    }

    byte[] read(String id, String name, long offset, int length) {
        Path file = copy(id).resolve(requireFileName(name));
        if (offset < 0 || length < 0 || length > BackupMessages.READ_BYTES_MAX) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "read " + length + " bytes at " + offset + " of a backup file");
        }
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            ByteBuffer buffer = ByteBuffer.allocate((int) Math.max(0, Math.min(length, channel.size() - offset)));
            while (buffer.hasRemaining()) {
                if (channel.read(buffer, offset + buffer.position()) < 0) {
                    break;
                }
            }
            return buffer.position() == buffer.capacity() ? buffer.array() : java.util.Arrays.copyOf(buffer.array(), buffer.position());
        } catch (java.nio.file.NoSuchFileException e) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "backup " + id + " has no file " + name);
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot read backup file " + name + ": " + e.getMessage(), e);
        }
    }

    void end(String id) {
        delete(copy(id));
    }

    /** Removes copies made more than an hour before {@code nowMillis}: their backups are not coming back for them. */
    void removeAbandoned(long nowMillis) {
        if (!Files.isDirectory(directory)) {
            return;
        }
        try (Stream<Path> copies = Files.list(directory)) {
            for (Path copy : copies.toList()) {
                String name = copy.getFileName().toString();
                if (ID.matcher(name).matches() && Long.parseLong(name.substring(0, 13)) < nowMillis - ABANDONED_AFTER_MILLIS) {
                    LOG.warn("removing backup copy {}, abandoned", name);
                    delete(copy);
                }
            }
        } catch (IOException e) {
            LOG.warn("cannot list backup copies in {}: {}", directory, e.toString());
        }
    }

    private Path copy(String id) {
        if (id == null || !ID.matcher(id).matches()) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "no backup id " + id);
        }
        Path copy = directory.resolve(id);
        if (!Files.isDirectory(copy)) {
            throw new PlinthException(ErrorCode.NOT_FOUND, "no backup " + id + " (ended, or abandoned for an hour)");
        }
        return copy;
    }

    private static String requireFileName(String name) {
        if (name == null || !FILE_NAME.matcher(name).matches() || name.startsWith(".")) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "not a backup file name: " + name);
        }
        return name;
    }

    private static void delete(Path copy) {
        try {
            FileTrees.delete(copy);
        } catch (IOException e) {
            LOG.warn("cannot remove backup copy {}: {}", copy, e.toString());
        }
    }
}
