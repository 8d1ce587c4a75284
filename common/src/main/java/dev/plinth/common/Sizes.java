package dev.plinth.common;

import java.util.Locale;

/** Byte sizes as people write them: 4096, 64K, 1M, 4MiB, 2G. Binary units throughout. */
public final class Sizes {
    private Sizes() {}

    public static long parseBytes(String text) {
        String value = text.trim().toUpperCase(Locale.ROOT);
        if (value.endsWith("IB")) {
            value = value.substring(0, value.length() - 2);
        } else if (value.endsWith("B")) {
            value = value.substring(0, value.length() - 1);
        }
        long multiplier = 1;
        if (!value.isEmpty()) {
            switch (value.charAt(value.length() - 1)) {
                case 'K' -> multiplier = 1L << 10;
                case 'M' -> multiplier = 1L << 20;
                case 'G' -> multiplier = 1L << 30;
                case 'T' -> multiplier = 1L << 40;
                default -> { }
            }
        }
        if (multiplier != 1) {
            value = value.substring(0, value.length() - 1);
        }
        try {
            long number = Long.parseLong(value.trim());
            if (number < 0) {
                throw new NumberFormatException();
            }
            return Math.multiplyExact(number, multiplier);
        } catch (NumberFormatException | ArithmeticException e) {
            throw PlinthException.of(ErrorCode.INVALID_ARGUMENT, "not a byte size: '%s'", text);
        }
    }

    public static String format(long bytes) {
        return format(bytes, 1024, new String[] {"B", "KiB", "MiB", "GiB", "TiB", "PiB"});
    }

    /** A byte count in powers of 1000 (kB, MB, GB, ...), as {@code df -H} prints it. */
    public static String formatDecimal(long bytes) {
        return format(bytes, 1000, new String[] {"B", "kB", "MB", "GB", "TB", "PB"});
    }

    private static String format(long bytes, int base, String[] units) {
        double value = bytes;
        int unit = 0;
        while (Math.abs(value) >= base && unit < units.length - 1) {
            value /= base;
            unit++;
        }
        return unit == 0 ? bytes + " B" : String.format(Locale.ROOT, "%.1f %s", value, units[unit]);
    }
}
