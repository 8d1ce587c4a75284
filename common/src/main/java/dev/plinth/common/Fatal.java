package dev.plinth.common;

import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Stops the process on a failure it must not go on from: a replica whose store can no longer
 * apply what its log committed would diverge from its group, and the Raft library's answer to a
 * throwing state machine is to retry forever (a full disk logged 50,000 lines a second and never
 * stopped). One clear line, then the process halts without shutdown hooks (they would meet the
 * same failure). Separate-process tests exercise it; in-process tests must not reach it.
 */
public final class Fatal {
    private static final Logger LOG = LoggerFactory.getLogger(Fatal.class);
    /** The exit status of a halt (sysexits' EX_SOFTWARE is 70; this is EX_IOERR, the usual cause). */
    public static final int EXIT_STATUS = 74;
    private static final AtomicBoolean HALTING = new AtomicBoolean();

    private Fatal() {}

    /** Logs {@code what} once and halts the process; never returns. */
    public static RuntimeException halt(String what, Throwable cause) {
        if (HALTING.compareAndSet(false, true)) {
            LOG.error("{}; stopping the process (exit status {})", what, EXIT_STATUS, cause);
            System.err.flush();
            Runtime.getRuntime().halt(EXIT_STATUS);
        }
        // another thread is halting the process already: wait for it
        while (true) {
            try {
                Thread.sleep(Long.MAX_VALUE);
            } catch (InterruptedException e) {
                // keep waiting: nothing may go on past a fatal failure
            }
        }
    }
}
