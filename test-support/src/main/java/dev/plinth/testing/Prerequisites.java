package dev.plinth.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/**
 * What a test needs of the machine beyond a JDK (FUSE, compilers, the S3 clients, Chromium,
 * root), checked in one place. Where something is missing, a bare {@code ./mvnw verify} skips
 * the test and says what is missing and which Debian package provides it; with {@code CI=true}
 * (as {@code .ci/run} sets it) the test fails instead, so CI never passes by skipping.
 * {@code bin/test} installs everything first.
 */
public final class Prerequisites {
    private Prerequisites() {}

    /** A thing a test needs: a path that must exist (a device, a program, a header), and what provides it. */
    public record Need(String path, String providedBy) {
        public boolean present() {
            return Files.exists(Path.of(path));
        }
    }

    public static final Need DEV_FUSE = new Need("/dev/fuse", "the fuse kernel module (modprobe fuse)");
    public static final Need FUSERMOUNT = new Need("/usr/bin/fusermount3", "Debian package fuse3");
    public static final Need FUSE_HEADERS = new Need("/usr/include/fuse3/fuse_lowlevel.h", "Debian package libfuse3-dev");
    public static final Need GCC = new Need("/usr/bin/gcc", "Debian package gcc");
    public static final Need PYTHON = new Need("/usr/bin/python3", "Debian package python3");
    public static final Need FIO = new Need("/usr/bin/fio", "Debian package fio");
    public static final Need AWS_CLI = new Need("/usr/bin/aws", "Debian package awscli");
    public static final Need S3CMD = new Need("/usr/bin/s3cmd", "Debian package s3cmd");
    public static final Need RCLONE = new Need("/usr/bin/rclone", "Debian package rclone");
    public static final Need BOTO3 = new Need("/usr/lib/python3/dist-packages/boto3", "Debian package python3-boto3");
    public static final Need TORCH = new Need("/usr/lib/python3/dist-packages/torch", "Debian package python3-torch");
    public static final Need PROMTOOL = new Need("/usr/bin/promtool", "Debian package prometheus");
    public static final Need PROMETHEUS = new Need("/usr/bin/prometheus", "Debian package prometheus");
    public static final Need CHROMIUM = new Need("/usr/bin/chromium", "Debian package chromium");
    public static final Need IP = new Need("/usr/sbin/ip", "Debian package iproute2");
    public static final Need ISA_L = new Need("/usr/lib/x86_64-linux-gnu/libisal.so.2", "Debian package libisal2");

    /** Skips the calling test (fails it under CI=true) unless every one of {@code needs} is present. */
    public static void require(Need... needs) {
        List<String> missing = new ArrayList<>();
        for (Need need : needs) {
            if (!need.present()) {
                missing.add(need.path() + " (" + need.providedBy() + ")");
            }
        }
        report(missing);
    }

    /** Skips the calling test (fails it under CI=true) unless the tests run as root (mounts, network namespaces). */
    public static void requireRoot() {
        report(isRoot() ? List.of() : List.of("root (the test mounts file systems or makes network namespaces)"));
    }

    /** FUSE mounts: the device, libfuse3's fusermount3, running as root. */
    public static void requireFuse() {
        require(DEV_FUSE, FUSERMOUNT);
        requireRoot();
    }

    /** Whether this process's effective uid is 0 (the second field of /proc/self/status's Uid line). */
    private static boolean isRoot() {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
                if (line.startsWith("Uid:")) {
                    return line.split("\\s+")[2].equals("0");
                }
            }
        } catch (java.io.IOException e) {
            // not Linux: fall through
        }
        return "root".equals(System.getProperty("user.name"));
    }

    private static void report(List<String> missing) {
        if (missing.isEmpty()) {
            return;
        }
        String message = "this test needs " + String.join(", ", missing) + "; bin/test installs what the tests need";
        if ("true".equalsIgnoreCase(System.getenv("CI"))) {
            throw new AssertionError(message + " (CI=true: a missing prerequisite fails instead of skipping)");
        }
        Assumptions.abort(message);
    }
}
