package dev.plinth.common;

import static java.util.Objects.requireNonNull;

/** An expected failure with a typed {@link ErrorCode}; the message says what and where. */
public class PlinthException extends RuntimeException {
    private final ErrorCode code;

    public PlinthException(ErrorCode code, String message) {
        super(message);
        this.code = requireNonNull(code, "code is null");
    }

    public PlinthException(ErrorCode code, String message, Throwable cause) {
        super(message, cause);
        this.code = requireNonNull(code, "code is null");
    }

    public ErrorCode code() {
        return code;
    }

    @Override
    public String getMessage() {
        String detail = super.getMessage();
        return detail == null || detail.isEmpty() ? code.description() : code.description() + ": " + detail;
    }

    /** The message without the code's description, as sent on the wire. */
    public String detail() {
        return super.getMessage() == null ? "" : super.getMessage();
    }

    public static PlinthException of(ErrorCode code, String format, Object... args) {
        return new PlinthException(code, args.length == 0 ? format : String.format(format, args));
    }
}
