package dev.plinth.cli;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.Json;
import dev.plinth.common.PlinthException;
import dev.plinth.datasets.Tar;
import dev.plinth.meta.MetaStateMachine;
import dev.plinth.wire.messages.BackupMessages;
import dev.plinth.wire.messages.BackupMessages.BackupFile;
import dev.plinth.wire.messages.BackupMessages.MdtBackup;
import dev.plinth.wire.messages.FsckMessages.FsckReport;
import dev.plinth.wire.messages.MgmtMessages.MdtInfo;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * A backup of the cluster's metadata as one POSIX tar file: {@code manifest.json}, mgmt's cluster
 * state ({@code mgmt/cluster-state.bin}) and each MDT's store ({@code mdtN/...}, a RocksDB
 * checkpoint its leader made while it kept serving). File data stays on the storage targets; a
 * restore gives a metadata service back its namespace and the cluster map that says where the
 * data is. The file holds the S3 secret keys and the encryption master keys: it is written with
 * mode 0600.
 */
final class MetadataBackup {
    static final String MANIFEST = "manifest.json";
    static final String MGMT_STATE = "mgmt/cluster-state.bin";

    private MetadataBackup() {}

    /** What {@link #create} wrote. */
    record Summary(Path file, long bytes, List<Map<String, Object>> mdts) {}

    /**
     * Backs up mgmt and every MDT the cluster map lists to {@code out}, through a temporary file
     * beside it that is renamed once complete and fsynced: an interrupted backup leaves no file
     * that looks whole.
     */
    static Summary create(PlinthClient plinth, Path out) throws IOException {
        Path temporary = out.resolveSibling("." + out.getFileName() + ".partial");
        Files.deleteIfExists(temporary);
        Files.createFile(temporary, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        List<Map<String, Object>> mdts = new ArrayList<>();
        try (OutputStream file = Files.newOutputStream(temporary, StandardOpenOption.WRITE);
             OutputStream tar = new BufferedOutputStream(file, 1 << 20)) {
            long now = Instant.now().getEpochSecond();
            List<MdtBackup> copies = copiesThatAgree(plinth, plinth.refreshClusterMap().mdts().stream().map(MdtInfo::mdtId).toList());
            for (MdtBackup copy : copies) {
                mdts.add(copyMdt(plinth, copy, tar, now));
            }
            // mgmt after the MDTs: every chain and target a file's layout names was made before the file was
            writeMember(tar, MGMT_STATE, plinth.mgmtStateForBackup(), now);
            Map<String, Object> manifest = new LinkedHashMap<>();
            manifest.put("format", 1);
            manifest.put("created", Instant.ofEpochSecond(now).toString());
            manifest.put("mdts", mdts);
            writeMember(tar, MANIFEST, Json.write(manifest).getBytes(StandardCharsets.UTF_8), now);
            tar.write(Tar.end());
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(temporary);
            throw e;
        }
        try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.WRITE)) {
            channel.force(true);
        }
        Files.move(temporary, out, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        return new Summary(out, Files.size(out), mdts);
    }

    /**
     * A copy of each MDT's store, made while every MDT holds its changes across MDTs and has none
     * open, so that the copies agree on every name that crosses MDTs (design note 93). One MDT
     * needs no hold.
     */
    private static List<MdtBackup> copiesThatAgree(PlinthClient plinth, List<Integer> mdtIds) {
        boolean hold = mdtIds.size() > 1;
        List<Integer> held = new ArrayList<>();
        List<MdtBackup> copies = new ArrayList<>();
        try {
            if (hold) {
                for (int mdtId : mdtIds) {
                    plinth.holdIntents(mdtId, true, INTENT_HOLD_LEASE_MILLIS);
                    held.add(mdtId);
                }
            }
            for (int mdtId : mdtIds) {
                copies.add(plinth.startMdtBackup(mdtId));
            }
            return copies;
        } catch (RuntimeException e) {
            for (MdtBackup copy : copies) {
                try {
                    plinth.endMdtBackup(copy.mdtId(), copy.backupId());
                } catch (RuntimeException ignored) {
                    // removed by its MDT within the hour
                }
            }
            throw e;
        } finally {
            for (int mdtId : held) {
                try {
                    plinth.holdIntents(mdtId, false, 0);
                } catch (RuntimeException e) {
                    System.err.println("plinth: MDT " + mdtId + " lets go of its changes across MDTs by itself within a minute: " + e.getMessage());
                }
            }
        }
    }

    /** How long an MDT holds its changes across MDTs for a backup at most, should the backup tool go away meanwhile. */
    private static final long INTENT_HOLD_LEASE_MILLIS = 60_000;

    private static Map<String, Object> copyMdt(PlinthClient plinth, MdtBackup backup, OutputStream tar, long now) throws IOException {
        int mdtId = backup.mdtId();
        long bytes = 0;
        try {
            for (BackupFile file : backup.files()) {
                tar.write(Tar.header("mdt" + mdtId + "/" + file.name(), file.sizeBytes(), 0600, now));
                long offset = 0;
                while (offset < file.sizeBytes()) {
                    int length = (int) Math.min(BackupMessages.READ_BYTES_MAX, file.sizeBytes() - offset);
                    byte[] data = plinth.readMdtBackup(mdtId, backup.backupId(), file.name(), offset, length);
                    if (data.length != length) {
                        throw new PlinthException(ErrorCode.IO_ERROR, "MDT " + mdtId + " backup file " + file.name() + " changed while it was read");
                    }
                    tar.write(data);
                    offset += length;
                }
                tar.write(new byte[(int) (Tar.padded(file.sizeBytes()) - file.sizeBytes())]);
                bytes += file.sizeBytes();
            }
        } finally {
            try {
                plinth.endMdtBackup(mdtId, backup.backupId());
            } catch (RuntimeException e) {
                System.err.println("plinth: the copy of MDT " + mdtId + " stays on its leader for an hour: " + e.getMessage());
            }
        }
        Map<String, Object> entry = new LinkedHashMap<>();
        entry.put("mdt", mdtId);
        entry.put("applied_index", backup.appliedIndex());
        entry.put("files", backup.files().size());
        entry.put("bytes", bytes);
        return entry;
    }

    private static void writeMember(OutputStream tar, String name, byte[] data, long now) throws IOException {
        tar.write(Tar.header(name, data.length, 0600, now));
        tar.write(data);
        tar.write(new byte[(int) (Tar.padded(data.length) - data.length)]);
    }

    /**
     * Writes the metadata in backup {@code file} under {@code dataDirectory} as the roles keep it
     * ({@code meta/mdtN/db}, {@code mgmt/cluster-state.bin}), for the MDTs in {@code mdts} (null:
     * every one in the backup) and mgmt if {@code withMgmt}. Refuses to write over metadata that is
     * there. A restored MDT starts a new Raft log (every replica of the MDT is restored from the
     * same backup) and skips the inode ids handed out after the backup
     * ({@link MetaStateMachine#prepareRestoredStore}); with {@code rejoin}, the store keeps the log
     * index it was copied at, for one replica of a running group to catch up from the leader's log.
     */
    static List<String> restore(Path file, Path dataDirectory, Set<Integer> mdts, boolean withMgmt, boolean rejoin) throws IOException {
        Set<Integer> inBackup = new TreeSet<>();
        boolean hasMgmt = false;
        try (InputStream in = Files.newInputStream(file)) {
            Tar.Reader reader = new Tar.Reader(in, file.toString());
            for (Tar.Member member = reader.next(); member != null; member = reader.next()) {
                if (member.name().equals(MGMT_STATE)) {
                    hasMgmt = true;
                } else if (member.name().matches("mdt[0-9]+/[^/]+")) {
                    inBackup.add(Integer.parseInt(member.name().substring(3, member.name().indexOf('/'))));
                }
            }
        }
        if (!hasMgmt) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, file + " is not a plinth metadata backup (no " + MGMT_STATE + ")");
        }
        Set<Integer> chosen = mdts == null ? inBackup : mdts;
        for (int mdt : chosen) {
            if (!inBackup.contains(mdt)) {
                throw new PlinthException(ErrorCode.NOT_FOUND, file + " holds no MDT " + mdt + " (it holds " + inBackup + ")");
            }
            Path mdtDirectory = mdtDirectory(dataDirectory, mdt);
            if (Files.exists(mdtDirectory)) {
                throw new PlinthException(ErrorCode.ALREADY_EXISTS, mdtDirectory + " exists: move it aside before restoring MDT " + mdt + " there");
            }
        }
        Path mgmtState = dataDirectory.resolve("mgmt").resolve("cluster-state.bin");
        if (withMgmt && Files.exists(dataDirectory.resolve("mgmt"))) {
            throw new PlinthException(ErrorCode.ALREADY_EXISTS, dataDirectory.resolve("mgmt") + " exists: move it aside before restoring mgmt there");
        }
        List<String> restored = new ArrayList<>();
        try (InputStream in = Files.newInputStream(file)) {
            Tar.Reader reader = new Tar.Reader(in, file.toString());
            for (Tar.Member member = reader.next(); member != null; member = reader.next()) {
                Path target = null;
                if (member.name().equals(MGMT_STATE) && withMgmt) {
                    target = mgmtState;
                } else if (member.name().matches("mdt[0-9]+/[^/]+")) {
                    int mdt = Integer.parseInt(member.name().substring(3, member.name().indexOf('/')));
                    String name = member.name().substring(member.name().indexOf('/') + 1);
                    if (chosen.contains(mdt) && !name.startsWith(".")) {
                        target = mdtDirectory(dataDirectory, mdt).resolve("db").resolve(name);
                    }
                }
                if (target != null) {
                    Files.createDirectories(target.getParent());
                    try (OutputStream out = Files.newOutputStream(target, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                        byte[] buffer = new byte[1 << 16];
                        for (int read = reader.read(buffer, 0, buffer.length); read >= 0; read = reader.read(buffer, 0, buffer.length)) {
                            out.write(buffer, 0, read);
                        }
                    }
                }
            }
        }
        for (int mdt : chosen) {
            if (!rejoin) {
                MetaStateMachine.prepareRestoredStore(mdtDirectory(dataDirectory, mdt).resolve("db"), mdt);
            }
            restored.add("MDT " + mdt + " -> " + mdtDirectory(dataDirectory, mdt) + (rejoin ? " (to rejoin its running group)" : ""));
        }
        if (withMgmt) {
            Files.setPosixFilePermissions(mgmtState, PosixFilePermissions.fromString("rw-------"));
            restored.add("mgmt -> " + mgmtState.getParent());
        }
        return restored;
    }

    /**
     * Checks that backup {@code file} restores: it is whole (every member, mgmt's state decodes),
     * and each MDT's store in it opens and passes fsck's namespace check. Unpacks each store into
     * a temporary directory under {@code scratch}, removed afterwards. Returns one line per part.
     */
    static List<String> verify(Path file, Path scratch) throws IOException {
        Path work = Files.createTempDirectory(scratch, "plinth-backup-verify-");
        List<String> lines = new ArrayList<>();
        try {
            restoreInto(file, work);
            Path mgmtState = work.resolve("mgmt").resolve("cluster-state.bin");
            lines.add("mgmt: " + dev.plinth.mgmt.MgmtService.describeState(Files.readAllBytes(mgmtState)));
            List<FsckReport> reports = new ArrayList<>();
            try (var mdts = Files.list(work.resolve("meta"))) {
                for (Path mdtDirectory : mdts.sorted().toList()) {
                    int mdt = Integer.parseInt(mdtDirectory.getFileName().toString().substring(3));
                    FsckReport report = MetaStateMachine.checkStore(mdtDirectory.resolve("db"), mdt);
                    lines.add("MDT " + mdt + ": " + report.inodes() + " inodes, " + report.entries() + " entries, " + report.findingsTotal() + " findings");
                    reports.add(report);
                }
            }
            List<dev.plinth.wire.messages.FsckMessages.Finding> findings = dev.plinth.wire.messages.FsckMessages.findings(reports);
            for (var finding : findings) {
                lines.add("  " + finding.kind() + " " + dev.plinth.common.InodeId.format(finding.inodeId()) + " " + finding.detail());
            }
            if (!findings.isEmpty() || reports.stream().anyMatch(report -> report.findingsTotal() > 0)) {
                throw new PlinthException(ErrorCode.IO_ERROR, String.join("\n", lines));
            }
            return lines;
        } finally {
            dev.plinth.common.FileTrees.delete(work);
        }
    }

    /** Every part of the backup under {@code dataDirectory}, as a restore writes it, without preparing the stores for a new log. */
    private static void restoreInto(Path file, Path dataDirectory) throws IOException {
        restore(file, dataDirectory, null, true, true);
    }

    private static Path mdtDirectory(Path dataDirectory, int mdt) {
        return dataDirectory.resolve("meta").resolve("mdt" + mdt);
    }
}
