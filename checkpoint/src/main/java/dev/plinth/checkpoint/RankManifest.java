package dev.plinth.checkpoint;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.Json;
import dev.plinth.common.PlinthException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One rank's part of a step, as its {@code MANIFEST.json} records it:
 * {@code {step, rank, world_size, files[{path, size, crc32c}]}}. Paths are relative to the rank's
 * directory, with '/' between names. A writer that cannot compute CRC32C cheaply (Python's
 * standard library has none) writes {@code "crc32c": null}; the agent computes it as it uploads
 * and the manifest on Plinth always has it.
 */
public record RankManifest(long step, int rank, int worldSize, List<FileEntry> files) {
    /** {@code crc32c} is null where the writer did not compute it. */
    public record FileEntry(String path, long size, Long crc32c) {
        public FileEntry {
            checkPath(path);
            if (size < 0) {
                throw invalid("negative size for " + path);
            }
            if (crc32c != null && (crc32c < 0 || crc32c > 0xFFFF_FFFFL)) {
                throw invalid("crc32c of " + path + " is not a 32-bit value");
            }
        }
    }

    public RankManifest {
        if (step < 0) {
            throw invalid("negative step");
        }
        if (worldSize < 1 || rank < 0 || rank >= worldSize) {
            throw invalid("rank " + rank + " of world_size " + worldSize);
        }
        files = List.copyOf(files);
        Set<String> seen = new HashSet<>();
        for (FileEntry file : files) {
            if (!seen.add(file.path())) {
                throw invalid("file listed twice: " + file.path());
            }
        }
    }

    /** Whether the step's files sit directly in the step directory (one process) or in rank directories. */
    public boolean singleRank() {
        return worldSize == 1;
    }

    public long bytes() {
        return files.stream().mapToLong(FileEntry::size).sum();
    }

    public Map<String, FileEntry> byPath() {
        Map<String, FileEntry> byPath = new LinkedHashMap<>();
        files.forEach(file -> byPath.put(file.path(), file));
        return byPath;
    }

    public String toJson() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("step", step);
        out.put("rank", rank);
        out.put("world_size", worldSize);
        List<Object> listed = new ArrayList<>();
        for (FileEntry file : files) {
            Map<String, Object> entry = new LinkedHashMap<>();
            entry.put("path", file.path());
            entry.put("size", file.size());
            entry.put("crc32c", file.crc32c());
            listed.add(entry);
        }
        out.put("files", listed);
        return Json.write(out) + "\n";
    }

    public static RankManifest parse(String json) {
        if (!(Json.parse(json) instanceof Map<?, ?> map)) {
            throw invalid("a manifest is a JSON object");
        }
        List<FileEntry> files = new ArrayList<>();
        if (!(map.get("files") instanceof List<?> listed)) {
            throw invalid("files is not a list");
        }
        for (Object item : listed) {
            if (!(item instanceof Map<?, ?> entry) || !(entry.get("path") instanceof String path)) {
                throw invalid("a file entry without a path");
            }
            Object crc = entry.get("crc32c");
            if (crc != null && !(crc instanceof Long)) {
                throw invalid("crc32c of " + path + " is not an integer");
            }
            files.add(new FileEntry(path, number(entry, "size"), (Long) crc));
        }
        return new RankManifest(number(map, "step"), Math.toIntExact(number(map, "rank")), Math.toIntExact(number(map, "world_size")), files);
    }

    private static long number(Map<?, ?> map, String key) {
        if (!(map.get(key) instanceof Long value)) {
            throw invalid(key + " is missing or not an integer");
        }
        return value;
    }

    /** A relative path of names that are neither empty, '.', '..' nor the manifest itself. */
    static void checkPath(String path) {
        if (path == null || path.isEmpty() || path.startsWith("/") || path.endsWith("/")) {
            throw invalid("bad file path '" + path + "'");
        }
        for (String name : path.split("/", -1)) {
            if (name.isEmpty() || name.equals(".") || name.equals("..") || name.indexOf('\0') >= 0) {
                throw invalid("bad file path '" + path + "'");
            }
        }
        if (path.equals(CheckpointNames.MANIFEST) || path.equals(CheckpointNames.MARKER)) {
            throw invalid(path + " is the protocol's own name");
        }
    }

    static PlinthException invalid(String what) {
        return new PlinthException(ErrorCode.INVALID_ARGUMENT, "checkpoint manifest: " + what);
    }
}
