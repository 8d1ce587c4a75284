package dev.plinth.gateway;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Locale;

/** HTTP and S3 date forms. */
final class Http {
    /** IMF-fixdate (RFC 9110), two-digit day: what Date and Last-Modified must carry. */
    private static final DateTimeFormatter IMF_FIXDATE = DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US)
            .withZone(ZoneOffset.UTC);
    /** Accepts what clients send: IMF-fixdate and RFC 1123's one-digit days. */
    private static final DateTimeFormatter RFC_1123 = DateTimeFormatter.RFC_1123_DATE_TIME.withLocale(Locale.US);
    private static final DateTimeFormatter ISO_MILLIS = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);
    static final DateTimeFormatter AMZ_DATE = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);

    private Http() {}

    /** RFC 1123 ("Wed, 02 Dec 2026 18:56:00 GMT"), as Date and Last-Modified carry it. */
    static String date(long epochMillis) {
        return IMF_FIXDATE.format(Instant.ofEpochMilli(epochMillis));
    }

    /** ISO 8601 with milliseconds, as S3's XML carries times. */
    static String isoDate(long epochMillis) {
        return ISO_MILLIS.format(Instant.ofEpochMilli(epochMillis));
    }

    /** Parses an HTTP date; null when it is not one (a conditional header that is ignored, as RFC 9110 says). */
    static Long parseDate(String value) {
        if (value == null) {
            return null;
        }
        try {
            return ZonedDateTime.parse(value.strip(), RFC_1123).toInstant().toEpochMilli();
        } catch (DateTimeParseException e) {
            return null;
        }
    }

    /** Parses an x-amz-date (20130524T000000Z). */
    static Instant parseAmzDate(String value) {
        try {
            return Instant.from(AMZ_DATE.parse(value));
        } catch (DateTimeParseException | NullPointerException e) {
            return null;
        }
    }
}
