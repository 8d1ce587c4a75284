package dev.plinth.server;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Calls to mgmt while a role starts, when mgmt may be starting too. */
final class Await {
    private static final Logger LOG = LoggerFactory.getLogger(Await.class);
    private static final long MGMT_WAIT_NANOS = TimeUnit.SECONDS.toNanos(60);

    private Await() {}

    /** Calls mgmt, retrying for a minute while it is unavailable. */
    static <T> T mgmt(Supplier<T> call) {
        long deadline = System.nanoTime() + MGMT_WAIT_NANOS;
        while (true) {
            try {
                return call.get();
            } catch (PlinthException e) {
                if (!e.code().retryable() || System.nanoTime() > deadline) {
                    throw e;
                }
                LOG.info("waiting for mgmt: {}", e.getMessage());
                try {
                    Thread.sleep(500);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw new PlinthException(ErrorCode.INTERRUPTED, "interrupted while waiting for mgmt");
                }
            }
        }
    }
}
