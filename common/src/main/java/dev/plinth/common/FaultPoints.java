package dev.plinth.common;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Named fault points in the real code paths, switched on by tests (as Lustre's fail_loc and
 * FoundationDB's BUGGIFY): a test that needs a failure, a delay or a wider race window names a
 * point instead of hoping for the timing. Off unless set; reading one that is off costs a map
 * lookup. Set in a process from the system property {@code plinth.faults}
 * ({@code NAME[=VALUE],...}, e.g. {@code -Dplinth.faults=storage.register-delay-millis=1500}),
 * or by an in-process test with {@link #set} and {@link #clear}. Thread-safe.
 *
 * <p>The points: {@code storage.register-delay-millis} (a storage node waits this long after its
 * listener opened before it registers with mgmt); {@code hsm.part-delay-millis} (a mover waits
 * this long after each part it archived or restored, so a test can kill it mid-copy);
 * {@code checkpoint.block-delay-millis} (the checkpoint agent waits this long after each block it
 * uploads, so a test can kill it mid-upload); {@code s3.slot-finish-wait-millis} (how long completing a
 * multipart upload waits for a claimed part slot to finish before it copies instead: 30 s);
 * {@code meta.intent-step-delay-millis} (an MDT coordinating a change across MDTs waits this long
 * before each step of an intent, so a test can kill a process while intents are open).
 *
 * <p>Faults of the disk and the network: {@code storage.fsync-fail=N} (the next N fsyncs of a
 * target's chunks fail with EIO); {@code storage.short-write=N} (the next N chunk writes reach
 * the disk in two calls, the first writing half, as a write(2) may);
 * {@code storage.disk-delay-millis} (every disk operation of a target waits this long first: a
 * slow disk); {@code rpc.drop-reply=MESSAGE} (the next request of that type, e.g. {@code Create}, is
 * carried out but its reply is never sent, as when the network loses it);
 * {@code client.ec-unreadable-cells=N} (a client's reads of the first N data cells of every
 * erasure-coded row fail as if their targets were away, so reads decode: degraded reads measured
 * without stopping a target).
 */
public final class FaultPoints {
    public static final String STORAGE_REGISTER_DELAY_MILLIS = "storage.register-delay-millis";
    public static final String HSM_PART_DELAY_MILLIS = "hsm.part-delay-millis";
    public static final String CHECKPOINT_BLOCK_DELAY_MILLIS = "checkpoint.block-delay-millis";
    public static final String S3_SLOT_FINISH_WAIT_MILLIS = "s3.slot-finish-wait-millis";
    public static final String META_INTENT_STEP_DELAY_MILLIS = "meta.intent-step-delay-millis";
    public static final String STORAGE_FSYNC_FAIL = "storage.fsync-fail";
    public static final String STORAGE_SHORT_WRITE = "storage.short-write";
    public static final String STORAGE_DISK_DELAY_MILLIS = "storage.disk-delay-millis";
    public static final String RPC_DROP_REPLY = "rpc.drop-reply";
    public static final String CLIENT_EC_UNREADABLE_CELLS = "client.ec-unreadable-cells";

    private static final Map<String, String> POINTS = new ConcurrentHashMap<>(parse(System.getProperty("plinth.faults")));

    private FaultPoints() {}

    static Map<String, String> parse(String text) {
        Map<String, String> points = new ConcurrentHashMap<>();
        if (text == null) {
            return points;
        }
        for (String point : text.split(",")) {
            if (point.isBlank()) {
                continue;
            }
            int equals = point.indexOf('=');
            points.put((equals < 0 ? point : point.substring(0, equals)).strip(), equals < 0 ? "" : point.substring(equals + 1).strip());
        }
        return points;
    }

    public static boolean enabled(String name) {
        return POINTS.containsKey(name);
    }

    /** A point's number, or {@code fallback} when it is off (or not a number). */
    public static long value(String name, long fallback) {
        String value = POINTS.get(name);
        if (value == null) {
            return fallback;
        }
        try {
            return Long.parseLong(value);
        } catch (NumberFormatException e) {
            return fallback;
        }
    }

    /** Sleeps for the point's number of milliseconds, if it is on. */
    public static void delay(String name) {
        long millis = value(name, 0);
        if (millis > 0) {
            try {
                Thread.sleep(millis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Takes one from a counting point ({@code NAME=N}): true, and N one less, if N was above 0. */
    public static boolean take(String name) {
        boolean[] taken = {false};
        POINTS.computeIfPresent(name, (key, value) -> {
            long left;
            try {
                left = Long.parseLong(value);
            } catch (NumberFormatException e) {
                return value;
            }
            if (left <= 0) {
                return value;
            }
            taken[0] = true;
            return left == 1 ? null : Long.toString(left - 1);
        });
        return taken[0];
    }

    /** Turns off a point whose value is {@code value}: true if it was on with that value (a one-shot fault for that case). */
    public static boolean takeIfValue(String name, String value) {
        return POINTS.remove(name, value);
    }

    public static void set(String name, String value) {
        POINTS.put(name, value == null ? "" : value);
    }

    public static void clear() {
        POINTS.clear();
    }
}
