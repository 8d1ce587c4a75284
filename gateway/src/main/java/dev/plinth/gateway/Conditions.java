package dev.plinth.gateway;

/** Conditional request headers (RFC 9110 as S3 applies them) and byte ranges. */
final class Conditions {
    private Conditions() {}

    /** Whether an If-Match style list ("*" or ETags) matches {@code etag}. */
    static boolean matches(String header, String etag) {
        for (String candidate : header.split(",")) {
            String value = candidate.strip();
            if (value.equals("*") || value.replace("\"", "").replace("W/", "").equals(etag)) {
                return true;
            }
        }
        return false;
    }

    /** null to go on, 304 (not modified) or 412 (precondition failed). */
    static Integer check(S3Exchange exchange, String etag, long modifiedMillis) {
        return evaluate(exchange, "", etag, modifiedMillis);
    }

    /** Whether the x-amz-copy-source-if-* conditions fail (any failure: S3 answers 412 for all four). */
    static boolean checkCopySource(S3Exchange exchange, String etag, long modifiedMillis) {
        return evaluate(exchange, "x-amz-copy-source-", etag, modifiedMillis) != null;
    }

    /** RFC 9110's order: If-Match, else If-Unmodified-Since; then If-None-Match, else If-Modified-Since (whole seconds). */
    private static Integer evaluate(S3Exchange exchange, String prefix, String etag, long modifiedMillis) {
        long modifiedSeconds = modifiedMillis / 1000;
        String ifMatch = exchange.header(prefix + "If-Match");
        String ifNoneMatch = exchange.header(prefix + "If-None-Match");
        Long ifModifiedSince = Http.parseDate(exchange.header(prefix + "If-Modified-Since"));
        Long ifUnmodifiedSince = Http.parseDate(exchange.header(prefix + "If-Unmodified-Since"));
        if (ifMatch != null ? !matches(ifMatch, etag) : ifUnmodifiedSince != null && modifiedSeconds > ifUnmodifiedSince / 1000) {
            return 412;
        }
        if (ifNoneMatch != null ? matches(ifNoneMatch, etag) : ifModifiedSince != null && modifiedSeconds <= ifModifiedSince / 1000) {
            return 304;
        }
        return null;
    }

    /**
     * A single "bytes=" range as [start, end) within {@code size}; null for none (or one we ignore,
     * as RFC 9110 allows: a syntactically bad or multi-range header); InvalidRange when unsatisfiable.
     */
    static long[] range(String header, long size) {
        if (header == null) {
            return null;
        }
        String value = header.strip();
        if (!value.startsWith("bytes=") || value.contains(",")) {
            return null;
        }
        String spec = value.substring(6).strip();
        int dash = spec.indexOf('-');
        if (dash < 0) {
            return null;
        }
        try {
            String first = spec.substring(0, dash).strip();
            String last = spec.substring(dash + 1).strip();
            long start;
            long end;
            if (first.isEmpty()) {
                if (last.isEmpty()) {
                    return null;
                }
                long suffix = Long.parseLong(last);
                if (suffix <= 0) {
                    throw unsatisfiable(size);
                }
                start = Math.max(0, size - suffix);
                end = size;
            } else {
                start = Long.parseLong(first);
                end = last.isEmpty() ? size : Math.min(size, Long.parseLong(last) + 1);
                if (!last.isEmpty() && Long.parseLong(last) < start) {
                    return null;
                }
            }
            if (start >= size || start < 0) {
                throw unsatisfiable(size);
            }
            return new long[] {start, end};
        } catch (NumberFormatException e) {
            return null;
        }
    }

    /**
     * UploadPartCopy's x-amz-copy-source-range, as [start, end): exactly "bytes=FIRST-LAST" with
     * both inside the source (no suffix or open ranges, no clamping, unlike a GET's Range).
     */
    static long[] copySourceRange(String header, long size) {
        java.util.regex.Matcher matcher = java.util.regex.Pattern.compile("bytes=(\\d{1,18})-(\\d{1,18})").matcher(header.strip());
        if (!matcher.matches()) {
            throw new S3Exception(S3Error.INVALID_ARGUMENT, "x-amz-copy-source-range must be bytes=FIRST-LAST");
        }
        long first = Long.parseLong(matcher.group(1));
        long last = Long.parseLong(matcher.group(2));
        if (first > last || last >= size) {
            throw unsatisfiable(size);
        }
        return new long[] {first, last + 1};
    }

    private static S3Exception unsatisfiable(long size) {
        return new S3Exception(S3Error.INVALID_RANGE, "the requested range is not satisfiable (the object has " + size + " bytes)");
    }
}
