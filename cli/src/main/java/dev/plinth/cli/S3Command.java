package dev.plinth.cli;

import dev.plinth.common.Json;
import dev.plinth.client.PlinthClient;
import dev.plinth.gateway.S3Credentials;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import dev.plinth.wire.messages.MgmtMessages.CreateAccessKey;
import java.nio.file.Path;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

@Command(name = "s3", mixinStandardHelpOptions = true, description = "The S3 gateway's settings kept in the cluster.",
        subcommands = {S3Command.Keys.class})
final class S3Command {
    private S3Command() {}

    @Command(name = "keys", mixinStandardHelpOptions = true,
            description = {"Access keys of the S3 gateway. Each maps to a uid, gid and groups: what a request signed with it writes",
                    "is owned by them, and POSIX permissions decide what it may read and change, as on the mount."},
            subcommands = {Keys.Create.class, Keys.ListKeys.class, Keys.Delete.class})
    static final class Keys {
        private Keys() {}

        @Command(name = "create", mixinStandardHelpOptions = true, description = "Create a key (id and secret are generated unless given); prints it.")
        static final class Create implements Callable<Integer> {
            @Mixin
            ClientMixin client;

            @Option(names = "--uid", required = true, description = "The uid requests signed with the key act as.")
            int uid;

            @Option(names = "--gid", description = "Their gid (default: the uid).")
            Integer gid;

            @Option(names = "--groups", split = ",", paramLabel = "GID[,GID...]", description = "Supplementary groups.")
            List<Integer> groups = new ArrayList<>();

            @Option(names = "--access-key", paramLabel = "ID", description = "Key id (3-128 of A-Z a-z 0-9 . _ -); generated if absent.")
            String accessKeyId;

            @Option(names = "--secret-key-file", paramLabel = "FILE", description = "Read the secret from FILE (8-128 printable characters); generated if absent.")
            Path secretKeyFile;

            @Option(names = "--description", paramLabel = "TEXT", description = "What the key is for.")
            String description = "";

            @Option(names = "--credentials-file", paramLabel = "FILE",
                    description = "Also write the key to FILE (mode 0600) in the AWS credentials-file format, as [default].")
            Path credentialsFile;

            @Option(names = "--json", description = "Print as JSON.")
            boolean json;

            @Override
            public Integer call() throws java.io.IOException {
                String secretKey = secretKeyFile == null ? null : java.nio.file.Files.readString(secretKeyFile).strip();
                AccessKey key;
                try (PlinthClient plinth = client.connect()) {
                    key = plinth.createAccessKey(new CreateAccessKey(accessKeyId, secretKey, uid, gid == null ? uid : gid, groups, description));
                }
                if (credentialsFile != null) {
                    S3Credentials.write(credentialsFile, key);
                }
                if (json) {
                    System.out.println(Json.write(describe(key, true)));
                } else {
                    System.out.println("aws_access_key_id = " + key.accessKeyId());
                    System.out.println("aws_secret_access_key = " + key.secretKey());
                    System.out.println("# acts as uid " + key.uid() + ", gid " + key.gid() + (key.groups().isEmpty() ? "" : ", groups " + key.groups()));
                }
                return 0;
            }
        }

        @Command(name = "list", mixinStandardHelpOptions = true, description = "List keys (secrets are not shown).")
        static final class ListKeys implements Callable<Integer> {
            @Mixin
            ClientMixin client;

            @Option(names = "--json", description = "Print as JSON.")
            boolean json;

            @Override
            public Integer call() {
                List<AccessKey> keys;
                try (PlinthClient plinth = client.connect()) {
                    keys = plinth.accessKeys();
                }
                if (json) {
                    System.out.println(Json.write(keys.stream().map(key -> describe(key, false)).toList()));
                    return 0;
                }
                System.out.printf("%-24s %8s %8s  %-20s %s%n", "ACCESS KEY", "UID", "GID", "CREATED", "DESCRIPTION");
                for (AccessKey key : keys) {
                    System.out.printf("%-24s %8d %8d  %-20s %s%n", key.accessKeyId(), key.uid(), key.gid(),
                            Instant.ofEpochMilli(key.createdMillis()).toString().replaceAll("\\.\\d+Z$", "Z"), key.description());
                }
                return 0;
            }
        }

        @Command(name = "delete", mixinStandardHelpOptions = true, description = "Delete a key; requests signed with it are refused within seconds.")
        static final class Delete implements Callable<Integer> {
            @Mixin
            ClientMixin client;

            @Parameters(index = "0", paramLabel = "ACCESS_KEY")
            String accessKeyId;

            @Override
            public Integer call() {
                try (PlinthClient plinth = client.connect()) {
                    plinth.deleteAccessKey(accessKeyId);
                }
                return 0;
            }
        }

        private static Map<String, Object> describe(AccessKey key, boolean withSecret) {
            Map<String, Object> out = new LinkedHashMap<>();
            out.put("access_key_id", key.accessKeyId());
            if (withSecret) {
                out.put("secret_access_key", key.secretKey());
            }
            out.put("uid", key.uid());
            out.put("gid", key.gid());
            out.put("groups", key.groups());
            out.put("description", key.description());
            out.put("created", Instant.ofEpochMilli(key.createdMillis()).toString());
            return out;
        }
    }
}
