package dev.plinth.checkpoint;

import dev.plinth.common.Json;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A complete step's marker on Plinth ({@code CHECKPOINT.json}): written into the partial
 * directory once every rank is there and verified, just before the rename that completes the step.
 * {@code sequence} counts the steps committed to the destination (1, 2, ...); {@code archive}
 * says whether this step goes to the cold tier (every {@code --archive-every}-th sequence).
 */
public record StepMarker(long step, int worldSize, long sequence, boolean archive, long files, long bytes, long committedMillis) {
    public String toJson() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("step", step);
        out.put("world_size", worldSize);
        out.put("sequence", sequence);
        out.put("archive", archive);
        out.put("files", files);
        out.put("bytes", bytes);
        out.put("committed_at", java.time.Instant.ofEpochMilli(committedMillis).toString());
        return Json.write(out) + "\n";
    }

    public static StepMarker parse(String json) {
        if (!(Json.parse(json) instanceof Map<?, ?> map)) {
            throw RankManifest.invalid("a step marker is a JSON object");
        }
        return new StepMarker(number(map, "step"), Math.toIntExact(number(map, "world_size")), number(map, "sequence"),
                Boolean.TRUE.equals(map.get("archive")), number(map, "files"), number(map, "bytes"),
                map.get("committed_at") instanceof String at ? java.time.Instant.parse(at).toEpochMilli() : 0);
    }

    private static long number(Map<?, ?> map, String key) {
        if (!(map.get(key) instanceof Long value)) {
            throw RankManifest.invalid("marker field " + key + " is missing or not an integer");
        }
        return value;
    }
}
