package dev.plinth.gateway;

import static java.util.Objects.requireNonNull;

/** A request that ends in an S3 error response. */
final class S3Exception extends RuntimeException {
    private final S3Error error;

    S3Exception(S3Error error, String message) {
        super(message, null, false, false);
        this.error = requireNonNull(error, "error is null");
    }

    S3Exception(S3Error error, String message, Throwable cause) {
        super(message, cause, false, false);
        this.error = requireNonNull(error, "error is null");
    }

    S3Error error() {
        return error;
    }
}
