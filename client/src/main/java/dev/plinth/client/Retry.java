package dev.plinth.client;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.NonBlocking;
import dev.plinth.common.PlinthException;
import java.util.function.Supplier;

/**
 * Retries an idempotent call on retryable errors (unavailable, busy, timed out, not leader) with
 * capped exponential backoff until a deadline. Changes are idempotent because they carry the same
 * request id on every try and the metadata service deduplicates them.
 */
final class Retry {
    private Retry() {}

    /** Retries for up to {@code timeoutMillis}; 0 or less retries until the call succeeds or fails for good. */
    static <T> T call(long timeoutMillis, Supplier<T> attempt, Runnable beforeRetry) {
        long deadline = deadlineNanos(timeoutMillis);
        long backoffMillis = 10;
        while (true) {
            try {
                return attempt.get();
            } catch (PlinthException e) {
                if (!e.code().retryable() || System.nanoTime() + backoffMillis * 1_000_000 > deadline) {
                    throw e;
                }
            }
            PlinthClient.checkCancelled();
            NonBlocking.check("a retry's pause");
            try {
                Thread.sleep(backoffMillis);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new PlinthException(ErrorCode.UNAVAILABLE, "interrupted while retrying");
            }
            backoffMillis = Math.min(1000, backoffMillis * 2);
            if (beforeRetry != null) {
                beforeRetry.run();
            }
        }
    }

    /** The System.nanoTime() after which a retry window of {@code timeoutMillis} is over (0: never). */
    static long deadlineNanos(long timeoutMillis) {
        return timeoutMillis <= 0 ? Long.MAX_VALUE : System.nanoTime() + timeoutMillis * 1_000_000;
    }
}
