package dev.plinth.gateway;

import static java.util.Objects.requireNonNull;

import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An access key in the AWS shared-credentials file format ({@code [default]},
 * {@code aws_access_key_id}, {@code aws_secret_access_key}), which the AWS CLI, the SDKs, boto3 and
 * rclone read through {@code AWS_SHARED_CREDENTIALS_FILE}. Written with mode 0600, atomically.
 */
public final class S3Credentials {
    private S3Credentials() {}

    /** A key id and its secret. */
    public record KeyPair(String accessKeyId, String secretKey) {}

    public static void write(Path file, AccessKey key) {
        requireNonNull(key, "key is null");
        String text = "# Plinth S3 key for uid " + key.uid() + " (gid " + key.gid() + "); use with AWS_SHARED_CREDENTIALS_FILE=" + file + "\n"
                + "[default]\n"
                + "aws_access_key_id = " + key.accessKeyId() + "\n"
                + "aws_secret_access_key = " + key.secretKey() + "\n";
        try {
            Path temporary = file.resolveSibling(file.getFileName() + ".tmp");
            Files.deleteIfExists(temporary);
            Files.createFile(temporary, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.writeString(temporary, text);
            Files.move(temporary, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot write S3 credentials to " + file + ": " + e.getMessage(), e);
        }
    }

    /** The {@code [default]} key pair of a credentials file. */
    public static KeyPair read(Path file) {
        Map<String, String> values = new LinkedHashMap<>();
        String section = "";
        try {
            for (String raw : Files.readAllLines(file)) {
                String line = raw.strip();
                if (line.isEmpty() || line.startsWith("#") || line.startsWith(";")) {
                    continue;
                }
                if (line.startsWith("[") && line.endsWith("]")) {
                    section = line.substring(1, line.length() - 1).strip();
                } else if (section.equals("default") && line.contains("=")) {
                    values.put(line.substring(0, line.indexOf('=')).strip(), line.substring(line.indexOf('=') + 1).strip());
                }
            }
        } catch (IOException e) {
            throw new PlinthException(ErrorCode.IO_ERROR, "cannot read S3 credentials from " + file + ": " + e.getMessage(), e);
        }
        String id = values.get("aws_access_key_id");
        String secret = values.get("aws_secret_access_key");
        if (id == null || secret == null) {
            throw new PlinthException(ErrorCode.INVALID_ARGUMENT, file + " has no [default] aws_access_key_id and aws_secret_access_key");
        }
        return new KeyPair(id, secret);
    }
}
