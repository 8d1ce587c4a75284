package dev.plinth.common;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Supplier;

/**
 * Work that must not wait: a network event loop answering a request itself when everything the
 * answer needs is already in memory (design note 71). Code that would wait (a read of the disk, a
 * call answered later, a lock another thread may hold long, a retry's pause) asks {@link #check}
 * first, which inside such work fails with {@link ErrorCode#WOULD_BLOCK} and remembers that it did,
 * so that the caller hands the whole request to a thread that may wait, even where some layer
 * between caught the failure and went on ({@link #refused}). Everywhere else it does nothing.
 */
public final class NonBlocking {
    /** One piece of work that must not wait, and whether it asked to. */
    private static final class Attempt {
        boolean refused;
        /** What {@link #ifKept} put off until the attempt is over; made on first use. */
        List<Runnable> effects;
    }

    private static final ScopedValue<Attempt> ATTEMPT = ScopedValue.newInstance();

    private NonBlocking() {}

    /** Runs {@code work} as work that must not wait, on this thread. */
    public static <T> T call(Supplier<T> work) {
        Attempt attempt = new Attempt();
        T result = ScopedValue.where(ATTEMPT, attempt).call(work::get);
        if (!attempt.refused && attempt.effects != null) {
            attempt.effects.forEach(Runnable::run);
        }
        return result;
    }

    /** Whether this thread runs work that must not wait. */
    public static boolean active() {
        return ATTEMPT.isBound();
    }

    /** Fails with WOULD_BLOCK inside work that must not wait; {@code what} names what would have waited. */
    public static void check(String what) {
        if (ATTEMPT.isBound()) {
            throw refuse(what);
        }
    }

    /**
     * Records, inside work that must not wait, that {@code what} would have, and returns the
     * WOULD_BLOCK failure to report it with: for code that answers with a failed future rather
     * than a throw.
     */
    public static PlinthException refuse(String what) {
        ATTEMPT.get().refused = true;
        return new PlinthException(ErrorCode.WOULD_BLOCK, what + " would wait");
    }

    /**
     * Runs {@code effect} now, or, inside work that must not wait, when that work is over and only
     * if it ended without a refusal or a throw: for counting what a request did (job statistics),
     * which such an attempt does again on the thread it is handed to. Bounded by what one attempt does.
     */
    public static void ifKept(Runnable effect) {
        if (!ATTEMPT.isBound()) {
            effect.run();
            return;
        }
        Attempt attempt = ATTEMPT.get();
        if (attempt.effects == null) {
            attempt.effects = new ArrayList<>(2);
        }
        attempt.effects.add(effect);
    }

    /** Whether the work that must not wait has asked to (its outcome since then is not to be used). */
    public static boolean refused() {
        return ATTEMPT.isBound() && ATTEMPT.get().refused;
    }
}
