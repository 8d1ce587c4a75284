package dev.plinth.wire;

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import java.util.concurrent.TimeUnit;

/**
 * Timers for deadlines that almost never fire (an RPC's timeout, a request body's idle limit), on
 * one timer wheel per JVM that ticks every {@value #TICK_MILLIS} ms.
 *
 * <p>Why not the obvious timers: a task scheduled on a channel's event loop from a request thread
 * is a hand-off that wakes the event loop when it sleeps, and cancelling it is another; a virtual
 * thread's timed wait enters the JDK scheduler's delay queue and wakes its thread. On the small
 * S3 requests we measure, each of those cost more than the work it guarded (design note 58).
 * Adding to and cancelling on the wheel only enqueue; the wheel's one thread wakes once a tick.
 * The deadlines are seconds or minutes long, so a tick's lateness does not matter.
 *
 * <p>Bounded: every caller holds at most one timer per request it has admitted, and requests are
 * bounded where they are admitted.
 */
public final class Deadlines {
    static final int TICK_MILLIS = 20;
    private static final HashedWheelTimer WHEEL = new HashedWheelTimer(
            Thread.ofPlatform().name("plinth-deadlines").daemon().factory(), TICK_MILLIS, TimeUnit.MILLISECONDS, 512);

    private Deadlines() {}

    /**
     * Runs {@code action} on the wheel's thread after {@code millis}, unless cancelled first; the
     * action must be short and must not block.
     */
    public static Timeout after(long millis, Runnable action) {
        return WHEEL.newTimeout(timeout -> action.run(), millis, TimeUnit.MILLISECONDS);
    }
}
