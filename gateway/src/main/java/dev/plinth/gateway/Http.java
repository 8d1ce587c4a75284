package dev.plinth.gateway;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Locale;

/** HTTP and S3 date forms, and the percent-encoding of request targets. */
public final class Http {
    /** IMF-fixdate (RFC 9110), two-digit day: what Date and Last-Modified must carry. */
    private static final DateTimeFormatter IMF_FIXDATE = DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'", Locale.US)
            .withZone(ZoneOffset.UTC);
    /** Accepts what clients send: IMF-fixdate and RFC 1123's one-digit days. */
    private static final DateTimeFormatter RFC_1123 = DateTimeFormatter.RFC_1123_DATE_TIME.withLocale(Locale.US);
    private static final DateTimeFormatter ISO_MILLIS = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);
    public static final DateTimeFormatter AMZ_DATE = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC);

    private Http() {}

    /** RFC 1123 ("Wed, 02 Dec 2026 18:56:00 GMT"), as Date and Last-Modified carry it. */
    public static String date(long epochMillis) {
        return IMF_FIXDATE.format(Instant.ofEpochMilli(epochMillis));
    }

    /** ISO 8601 with milliseconds, as S3's XML carries times. */
    static String isoDate(long epochMillis) {
        return ISO_MILLIS.format(Instant.ofEpochMilli(epochMillis));
    }

    /** Parses an HTTP date; null when it is not one (a conditional header that is ignored, as RFC 9110 says). */
    public static Long parseDate(String value) {
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

    /** A request target's path or query part whose bytes are not UTF-8 (S3's keys and parameters are). */
    static final class BadEncodingException extends Exception {
        BadEncodingException(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Decodes a percent-encoded part of a request target as UTF-8, refusing bytes that are not
     * UTF-8 instead of replacing them (the JDK's and Netty's decoders make U+FFFD of them, so that
     * two different keys would name one object). Characters that came unencoded stand for their
     * own bytes (the request line is read as ISO-8859-1). With {@code plusIsSpace} a '+' is a
     * space, as in form-encoded query strings; in a path it is itself.
     */
    static String decodeStrict(String encoded, boolean plusIsSpace) throws BadEncodingException {
        boolean plain = true;
        for (int i = 0; i < encoded.length() && plain; i++) {
            char c = encoded.charAt(i);
            plain = c < 0x80 && c != '%' && !(plusIsSpace && c == '+');
        }
        if (plain) {
            return encoded;
        }
        byte[] bytes = new byte[encoded.length()];
        int length = 0;
        for (int i = 0; i < encoded.length(); i++) {
            char c = encoded.charAt(i);
            if (c == '%') {
                int high = i + 2 < encoded.length() ? Character.digit(encoded.charAt(i + 1), 16) : -1;
                int low = high < 0 ? -1 : Character.digit(encoded.charAt(i + 2), 16);
                if (low < 0) {
                    throw new BadEncodingException("'%' is not followed by two hexadecimal digits");
                }
                bytes[length++] = (byte) (high << 4 | low);
                i += 2;
            } else if (c > 0xff) {
                throw new BadEncodingException("the request target holds a character beyond ISO-8859-1");
            } else {
                bytes[length++] = plusIsSpace && c == '+' ? (byte) ' ' : (byte) c;
            }
        }
        try {
            return java.nio.charset.StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(java.nio.charset.CodingErrorAction.REPORT)
                    .onUnmappableCharacter(java.nio.charset.CodingErrorAction.REPORT)
                    .decode(java.nio.ByteBuffer.wrap(bytes, 0, length)).toString();
        } catch (java.nio.charset.CharacterCodingException e) {
            throw new BadEncodingException("the request target is not valid UTF-8 once percent-decoded");
        }
    }
}
