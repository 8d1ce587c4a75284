package dev.plinth.fuse;

import dev.plinth.common.Config;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.common.Settings;
import java.util.ArrayList;
import java.util.List;

/**
 * What a mount is asked for, parsed from an fstab-style option string ({@code -o a,b=c}).
 *
 * <p>Plinth's own options: {@code hard} (the default: calls wait for an unavailable cluster until
 * it is back), {@code soft} with {@code timeo=SECONDS} (fail with EIO after that long),
 * {@code attr_timeout=SECONDS}, {@code entry_timeout=SECONDS}, {@code threads=N}, {@code ro},
 * and any Plinth setting as {@code key=value} (for example {@code client.readahead-bytes=32m}).
 * {@code allow_other} lets other users in (the default when mounting as root). As with libfuse,
 * a mount is {@code nosuid,nodev} unless {@code suid} or {@code dev} is given: any client's root
 * can make a set-user-ID file or a device node in a shared file system, and another host should
 * not honour it by default. Kernel options
 * that make no sense for Plinth ({@code _netdev}, {@code user_xattr}, {@code flock},
 * {@code defaults}, {@code rw}, {@code noauto}, {@code auto}) are accepted and ignored, so
 * an fstab line reads like Lustre's.
 */
public record MountOptions(Config config, boolean readOnly, boolean allowOther, boolean debug, boolean devices, boolean setIdBits) {
    /** Soft mounts fail after this long when no {@code timeo} is given. */
    static final long DEFAULT_SOFT_TIMEOUT_MILLIS = 30_000;

    public static MountOptions parse(String options, Config base, boolean root) {
        Config config = base.with(Settings.CLIENT_RETRY_TIMEOUT_MILLIS, 0L); // hard unless told otherwise
        boolean soft = false;
        Long softTimeoutMillis = null;
        boolean readOnly = false;
        boolean allowOther = root;
        boolean debug = false;
        boolean devices = false;
        boolean setIdBits = false;
        for (String option : split(options)) {
            int equals = option.indexOf('=');
            String key = equals < 0 ? option : option.substring(0, equals);
            String value = equals < 0 ? "" : option.substring(equals + 1);
            switch (key) {
                case "hard" -> soft = false;
                case "soft" -> soft = true;
                case "timeo", "timeout" -> softTimeoutMillis = secondsToMillis(key, value);
                case "attr_timeout" -> config = config.with(Settings.MOUNT_ATTR_TIMEOUT_MILLIS, secondsToMillis(key, value));
                case "entry_timeout" -> config = config.with(Settings.MOUNT_ENTRY_TIMEOUT_MILLIS, secondsToMillis(key, value));
                case "threads" -> config = config.with(Settings.MOUNT_THREADS.key(), value);
                case "ro" -> readOnly = true;
                case "rw", "defaults", "_netdev", "user_xattr", "flock", "noauto", "auto", "nofail", "default_permissions" -> { }
                case "allow_other" -> allowOther = true;
                case "debug" -> debug = true;
                case "dev" -> devices = true;
                case "nodev" -> devices = false;
                case "suid" -> setIdBits = true;
                case "nosuid" -> setIdBits = false;
                default -> {
                    if (equals < 0) {
                        throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "unknown mount option '" + option + "'");
                    }
                    config = config.with(key, value); // a Plinth setting; Config rejects unknown keys
                }
            }
        }
        if (soft) {
            config = config.with(Settings.CLIENT_RETRY_TIMEOUT_MILLIS, softTimeoutMillis == null ? DEFAULT_SOFT_TIMEOUT_MILLIS : softTimeoutMillis);
        }
        return new MountOptions(config, readOnly, allowOther, debug, devices, setIdBits);
    }

    private static List<String> split(String options) {
        List<String> result = new ArrayList<>();
        if (options == null) {
            return result;
        }
        for (String part : options.split(",")) {
            if (!part.isBlank()) {
                result.add(part.strip());
            }
        }
        return result;
    }

    private static long secondsToMillis(String key, String value) {
        try {
            double seconds = Double.parseDouble(value);
            if (seconds < 0 || Double.isNaN(seconds)) {
                throw new NumberFormatException();
            }
            return Math.round(seconds * 1000);
        } catch (NumberFormatException e) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, "mount option " + key + " needs a number of seconds, not '" + value + "'");
        }
    }
}
