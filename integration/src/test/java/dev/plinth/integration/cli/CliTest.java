package dev.plinth.integration.cli;

import dev.plinth.cli.Main;

import static org.assertj.core.api.Assertions.assertThat;

import dev.plinth.integration.MiniCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The commands the README shows, run as a user runs them, against an in-process cluster. */
class CliTest {
    @TempDir
    static Path directory;
    static MiniCluster cluster;


    @BeforeAll
    static void start() {
        cluster = MiniCluster.start(directory.resolve("data"));
    }

    @AfterAll
    static void stop() {
        cluster.close();
    }

    private static CliRun.Result plinth(String... arguments) {
        List<String> all = new ArrayList<>(List.of(arguments));
        if (!all.getFirst().equals("settings") && !all.contains("check")) { // neither talks to a cluster
            all.add(1, "--server=" + cluster.server().rpcAddress());
            all.add(2, "--secret-file=" + cluster.server().secretFile());
            if (List.of("fs", "pool", "hsm", "archive").contains(all.get(0)) && !all.get(3).equals("policy")) {
                // subcommand verbs: options go after the verb
                String verb = all.remove(3);
                all.add(1, verb);
            } else if (all.get(0).equals("s3") || all.get(0).equals("hsm") && all.get(3).equals("policy")) {
                // s3 keys VERB: options go after both
                String verb = all.remove(4);
                String group = all.remove(3);
                all.add(1, group);
                all.add(2, verb);
            }
        }
        return CliRun.run(all);
    }

    @Test
    void hsmVerbsAsLustreHasThem() throws Exception {
        byte[] bytes = new byte[1_500_000];
        new Random(3).nextBytes(bytes);
        Path local = directory.resolve("hsm.bin");
        Files.write(local, bytes);
        assertThat(plinth("fs", "mkdir", "-p", "/cold/set").exitCode()).isZero();
        assertThat(plinth("fs", "put", local.toString(), "/cold/set/a.bin").exitCode()).isZero();
        assertThat(plinth("fs", "put", local.toString(), "/cold/set/b.bin").exitCode()).isZero();
        assertThat(plinth("archive", "list").out()).contains("default").contains(directory.resolve("data").resolve("archive").toUri().toString());
        CliRun.Result archiveDirectory = plinth("hsm", "archive", "/cold/set");
        assertThat(archiveDirectory.exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(archiveDirectory.err()).contains("-R");
        assertThat(plinth("hsm", "archive", "-R", "/cold/set").exitCode()).isZero();
        assertThat(plinth("hsm", "state", "/cold/set/a.bin").out()).isEqualTo("/cold/set/a.bin: (0x00000009) exists archived, archive_id:1\n");
        assertThat(plinth("hsm", "release", "/cold/set/a.bin").exitCode()).isZero();
        assertThat(plinth("hsm", "state", "/cold/set/a.bin").out())
                .isEqualTo("/cold/set/a.bin: (0x0000000d) released exists archived, archive_id:1\n");
        assertThat(plinth("hsm", "state", "--json", "/cold/set/a.bin").out()).contains("\"states\":[\"exists\",\"archived\",\"released\"]")
                .contains("\"archive_id\":1").contains("\"checksum\":\"crc32c:");
        assertThat(plinth("hsm", "restore", "/cold/set/a.bin").exitCode()).isZero();
        Path back = directory.resolve("hsm.back");
        assertThat(plinth("fs", "get", "/cold/set/a.bin", back.toString()).exitCode()).isZero();
        assertThat(Files.readAllBytes(back)).isEqualTo(bytes);
        assertThat(plinth("hsm", "set", "--norelease", "/cold/set/b.bin").exitCode()).isZero();
        CliRun.Result refused = plinth("hsm", "release", "/cold/set/b.bin");
        assertThat(refused.exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(refused.err()).contains("norelease");
        assertThat(plinth("hsm", "state", "/cold/set/b.bin").out()).contains("never_release");
        assertThat(plinth("fs", "stat", "--json", "/cold/set/b.bin").out()).contains("\"size\":1500000")
                .contains("\"hsm\":{\"states\":[\"exists\",\"archived\"],\"flags\":[\"norelease\"],\"archive_id\":1,\"object_key\":\"");
        assertThat(plinth("hsm", "queue", "--json").out().trim()).isEqualTo("[]");
        assertThat(plinth("archive", "add", "--id", "2", "--name", "bad", "ftp://nowhere").exitCode()).isNotZero();

        Path rules = Files.writeString(directory.resolve("rules"), "# cold sets\narchive when size >= 1MiB under /cold\n");
        CliRun.Result dryRun = plinth("hsm", "policy", "run", "--rules", rules.toString(), "--dry-run", "--json");
        assertThat(dryRun.exitCode()).as(dryRun.err()).isZero();
        assertThat(dryRun.out()).contains("\"dry_run\":true").contains("\"matched_files\":2").contains("\"archive: already archived\":2");
        Path bad = Files.writeString(directory.resolve("bad-rules"), "archive when size >= 1MiB\nrelease when atime > soon\n");
        CliRun.Result check = plinth("hsm", "policy", "check", bad.toString());
        assertThat(check.exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(check.err()).contains("rules line 2: expected an age like 30d (s, m, h, d or w), found 'soon'");
        assertThat(plinth("hsm", "policy", "check", rules.toString()).out()).contains("line 2: archive when size >= 1MiB under /cold");
    }

    @Test
    void fileVerbsRoundTrip() throws Exception {
        byte[] bytes = new byte[2_500_000];
        new Random(9).nextBytes(bytes);
        Path local = directory.resolve("local.bin");
        Files.write(local, bytes);
        assertThat(plinth("fs", "mkdir", "-p", "/datasets/imagenet").exitCode()).isZero();
        assertThat(plinth("fs", "put", local.toString(), "/datasets/imagenet/").exitCode()).isZero();
        CliRun.Result listing = plinth("fs", "ls", "-l", "/datasets/imagenet");
        assertThat(listing.out()).contains("local.bin").contains(Integer.toString(bytes.length)).contains("-rw-r--r--");
        Path back = directory.resolve("back.bin");
        assertThat(plinth("fs", "get", "/datasets/imagenet/local.bin", back.toString()).exitCode()).isZero();
        assertThat(Files.readAllBytes(back)).isEqualTo(bytes);
        String text = "line of text\n".repeat(5_000);
        Files.writeString(directory.resolve("text.txt"), text);
        assertThat(plinth("fs", "put", directory.resolve("text.txt").toString(), "/datasets/text.txt").exitCode()).isZero();
        assertThat(plinth("fs", "get", "/datasets/text.txt", "-").out()).as("- is stdout, as for put it is stdin").isEqualTo(text);
        assertThat(Path.of("-")).doesNotExist();
        assertThat(plinth("fs", "mv", "/datasets/imagenet/local.bin", "/datasets/renamed.bin").exitCode()).isZero();
        assertThat(plinth("fs", "stat", "/datasets/renamed.bin").out()).contains("size: " + bytes.length);
        assertThat(plinth("fs", "rm", "/datasets/renamed.bin").exitCode()).isZero();
        assertThat(plinth("fs", "rm", "-r", "/datasets").exitCode()).isZero();
    }

    @Test
    void benchPrintsEveryFigureBesideItsBaseline() throws Exception {
        Path local = Files.createDirectories(directory.resolve("bench-local"));
        CliRun.Result bench = plinth("bench", "--size", "4M", "--files", "20", "--warm", "--rounds", "2", "--local-dir", local.toString());
        assertThat(bench.exitCode()).as(bench.err()).isZero();
        assertThat(bench.out()).contains("sequential write + fsync").contains("sequential read (warm)").contains("create")
                .contains("stat").contains("unlink").contains("loopback TCP").contains("(round 2 of 2)")
                .contains("median of 2 rounds");
        if (java.nio.file.Files.isReadable(java.nio.file.Path.of("/proc/stat"))) { // the bench reads the machine's CPU time there
            assertThat(bench.out()).contains("plinth sequential read").containsPattern("this machine [0-9.]+ core-s per GiB, [0-9]+% idle");
        }
        assertThat(plinth("fs", "ls", "/.plinth-bench").out()).doesNotContain("seq.dat").doesNotContain("warm.dat");
    }

    @Test
    void errorsAreOneLineWithExitCodes() {
        CliRun.Result missing = plinth("fs", "stat", "/no/such/file");
        assertThat(missing.exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(missing.err().strip()).startsWith("plinth: no such file or directory").doesNotContain("\n");
        assertThat(plinth("fs", "mkdir", "/twice").exitCode()).isZero();
        assertThat(plinth("fs", "mkdir", "/twice").err()).contains("file exists");
        assertThat(plinth("fs", "frobnicate").exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(plinth("setstripe", "-c", "0", "/twice").exitCode()).isEqualTo(Main.EXIT_FAILED);
    }

    @Test
    void layoutPoolAndCapacityCommands() {
        assertThat(plinth("fs", "mkdir", "/striped").exitCode()).isZero();
        assertThat(plinth("setstripe", "-c", "3", "-S", "256K", "/striped").exitCode()).isZero();
        assertThat(plinth("setstripe", "-c", "2", "/striped/new-file").exitCode()).isZero();
        String json = plinth("getstripe", "--json", "/striped/new-file").out();
        assertThat(json).contains("\"stripe_count\":2").contains("\"stripe_size\":262144").contains("\"pool\":\"default\"")
                .contains("\"objects\":[{\"index\":0");
        assertThat(plinth("getstripe", "/striped").out()).contains("lmm_stripe_count:  3");
        assertThat(plinth("pool", "create", "fast", "1", "2").exitCode()).isZero();
        assertThat(plinth("pool", "list").out()).contains("fast").contains("[1, 2]");
        assertThat(plinth("setstripe", "--pool", "fast", "-c", "-1", "/striped/in-pool").exitCode()).isZero();
        assertThat(plinth("getstripe", "--json", "/striped/in-pool").out()).contains("\"stripe_count\":2").contains("\"pool\":\"fast\"");
        assertThat(plinth("pool", "create", "fast").err()).contains("file exists");
        // settings that would break a directory are refused when set, not met as EINVAL or ENOSPC at every later create
        assertThat(plinth("fs", "mkdir", "/unplaceable").exitCode()).isZero();
        CliRun.Result noPool = plinth("setstripe", "-p", "nopool", "/unplaceable");
        assertThat(noPool.exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(noPool.err()).contains("no pool named 'nopool'");
        CliRun.Result tooWide = plinth("setstripe", "-r", "2", "/unplaceable");
        assertThat(tooWide.exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(tooWide.err()).contains("2 replicas need as many storage nodes").contains("has 1");
        String small = writeSmallFile();
        assertThat(plinth("fs", "put", small, "/unplaceable/fine").exitCode()).isZero();
        assertThat(plinth("setstripe", "-r", "2", "--force", "/unplaceable").exitCode()).isZero();
        CliRun.Result create = plinth("fs", "put", small, "/unplaceable/refused");
        assertThat(create.exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(create.err()).contains("invalid argument").doesNotContain("no space");
        // status says so, and stops saying so once the directory has a layout the cluster can place
        CliRun.Result status = plinth("status");
        assertThat(status.out()).contains("directory /unplaceable has a layout set with --force that the cluster cannot place")
                .contains("2 replicas need as many storage nodes");
        assertThat(plinth("status", "--json").out()).contains("\"attention\":[").contains("directory /unplaceable has a layout");
        assertThat(plinth("setstripe", "-r", "1", "/unplaceable").exitCode()).isZero();
        assertThat(plinth("status").out()).doesNotContain("/unplaceable");
        assertThat(plinth("df").out()).contains("target1").contains("filesystem");
        assertThat(plinth("df", "-h").out()).contains("filesystem").containsPattern("[0-9.]+ (KiB|MiB|GiB|TiB)");
        assertThat(plinth("df", "-H").out()).contains("filesystem").containsPattern("[0-9.]+ (kB|MB|GB|TB)");
        assertThat(plinth("df", "--help").out()).contains("--human-readable").contains("--si");
        // errors name the path the user gave, not an inode number
        CliRun.Result notADirectory = plinth("fs", "mkdir", "/unplaceable/fine/below");
        assertThat(notADirectory.err().strip()).isEqualTo("plinth: not a directory: /unplaceable/fine/below");
        CliRun.Result directorySource = plinth("fs", "put", directory.toString(), "/from-a-directory");
        assertThat(directorySource.exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(directorySource.err()).contains(directory + " is a directory");
        assertThat(plinth("fs", "stat", "/from-a-directory").exitCode()).as("a failed put leaves nothing").isEqualTo(Main.EXIT_FAILED);
        assertThat(plinth("settings").out()).contains("layout.stripe-count");
    }

    @Test
    void erasureCodedLayouts() throws Exception {
        assertThat(plinth("fs", "mkdir", "/ec").exitCode()).isZero();
        CliRun.Result set = plinth("setstripe", "--ec", "2+1", "-S", "256K", "/ec");
        assertThat(set.exitCode()).as(set.err()).isZero();
        assertThat(set.err()).contains("warning: pool 'default' has 1 storage node(s) for 2+1 cells");
        assertThat(plinth("status").out()).contains("directory /ec has an erasure-coded layout whose 2+1 cells share storage nodes");
        byte[] bytes = new byte[1_300_000];
        new Random(3).nextBytes(bytes);
        Path local = directory.resolve("ec.bin");
        Files.write(local, bytes);
        assertThat(plinth("fs", "put", local.toString(), "/ec/file").exitCode()).isZero();
        String json = plinth("getstripe", "--json", "/ec/file").out();
        assertThat(json).contains("\"redundancy\":\"ec\"").contains("\"ec_data\":2").contains("\"ec_parity\":1").contains("\"stripe_count\":3")
                .contains("\"compression\":\"none\"").contains("\"logical_bytes\":1300000");
        // the first 64 KiB live on the MDT; rows of 2 x 256 KiB: 2 whole rows, then 251,424 bytes in the first cell of the
        // third; a parity cell for each; on disk a little more (whole file-system blocks, what the file system reserves)
        long stored = Long.parseLong(json.replaceAll(".*\"stored_bytes\":(\\d+).*", "$1").strip());
        long written = 1_300_000L - 65_536 + 2 * 262_144 + 251_424;
        assertThat(stored).isBetween(written, written + (256 << 10));
        assertThat(plinth("getstripe", "/ec/file").out()).contains("lmm_pattern:       ec").contains("plinth_redundancy: ec 2+1");
        Path back = directory.resolve("ec-back.bin");
        assertThat(plinth("fs", "get", "/ec/file", back.toString()).exitCode()).isZero();
        assertThat(Files.readAllBytes(back)).isEqualTo(bytes);
        // a target taken out for good: the file's cell on it is rebuilt on the spare one (one-replica files of other tests
        // on it are listed as lost, with exit status 1)
        int used = 0;
        for (int target = 1; target <= 4 && used == 0; target++) {
            CliRun.Result dry = plinth("rebuild", "--dry-run", "--json", "--target", String.valueOf(target));
            assertThat(dry.err()).isEmpty();
            used = dry.out().contains("\"would rebuild\"") ? target : 0;
        }
        assertThat(used).as("a target holds a cell").isPositive();
        CliRun.Result rebuilt = plinth("rebuild", "--target", String.valueOf(used));
        assertThat(rebuilt.out()).as(rebuilt.err()).contains("rebuilt=1");
        assertThat(plinth("rebuild", "--dry-run", "--target", String.valueOf(used)).out()).doesNotContain("would rebuild");
        assertThat(plinth("fs", "get", "/ec/file", back.toString()).exitCode()).isZero();
        assertThat(Files.readAllBytes(back)).isEqualTo(bytes);
        // the EC width sets the targets: -c and -r are refused with it, as a usage error
        assertThat(plinth("setstripe", "--ec", "2+1", "-c", "2", "/ec").exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(plinth("setstripe", "--ec", "2+1", "-r", "2", "/ec").exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(plinth("setstripe", "--ec", "four+two", "/ec").exitCode()).isEqualTo(Main.EXIT_USAGE);
        CliRun.Result tooWide = plinth("setstripe", "--ec", "4+2", "/ec");
        assertThat(tooWide.exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(tooWide.err()).contains("erasure coding 4+2 needs 6 targets").contains("has 4");
        assertThat(plinth("setstripe", "--ec", "none", "/ec").exitCode()).isZero();
        assertThat(plinth("getstripe", "--json", "/ec").out()).contains("\"redundancy\":\"replicas\"").contains("\"stripe_count\":1");
        assertThat(plinth("status").out()).doesNotContain("directory /ec");
        assertThat(plinth("fs", "rm", "-r", "/ec").exitCode()).isZero();
    }

    @Test
    void migrateListsMovesAndReports() throws Exception {
        assertThat(plinth("fs", "mkdir", "-p", "/to-migrate/sub").exitCode()).isZero();
        byte[] bytes = new byte[700_000];
        new Random(5).nextBytes(bytes);
        Path local = directory.resolve("migrate.bin");
        Files.write(local, bytes);
        assertThat(plinth("fs", "put", local.toString(), "/to-migrate/a").exitCode()).isZero();
        assertThat(plinth("fs", "put", local.toString(), "/to-migrate/sub/b").exitCode()).isZero();
        CliRun.Result dry = plinth("migrate", "--dry-run", "-c", "2", "/to-migrate");
        assertThat(dry.exitCode()).as(dry.err()).isZero();
        assertThat(dry.out()).contains("would migrate  /to-migrate/a").contains("/to-migrate/sub/b").contains("would migrate 2 file(s)");
        assertThat(plinth("getstripe", "--json", "/to-migrate/a").out()).as("a dry run moves nothing").contains("\"stripe_count\":1");
        CliRun.Result moved = plinth("migrate", "--json", "--ec", "2+1", "-S", "64K", "/to-migrate");
        assertThat(moved.exitCode()).as(moved.err()).isZero();
        assertThat(moved.out()).contains("\"outcome\":\"migrated\"").contains("\"files_migrated\":2")
                .contains("\"bytes_copied\":" + 2 * (700_000 - 65_536));
        assertThat(plinth("getstripe", "--json", "/to-migrate/sub/b").out()).contains("\"redundancy\":\"ec\"");
        Path back = directory.resolve("migrated-back.bin");
        assertThat(plinth("fs", "get", "/to-migrate/sub/b", back.toString()).exitCode()).isZero();
        assertThat(Files.readAllBytes(back)).isEqualTo(bytes);
        assertThat(plinth("migrate", "--ec", "2+1", "-S", "64K", "/to-migrate").out()).contains("migrated 0 file(s)");
        assertThat(plinth("migrate", "/to-migrate").exitCode()).as("nothing to change").isEqualTo(Main.EXIT_USAGE);
        assertThat(plinth("migrate", "--ec", "2+1", "-c", "3", "/to-migrate").exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(plinth("fs", "rm", "-r", "/to-migrate").exitCode()).isZero();
    }

    @Test
    void compressedLayouts() throws Exception {
        assertThat(plinth("fs", "mkdir", "/zipped").exitCode()).isZero();
        assertThat(plinth("setstripe", "--compress", "zstd:7", "/zipped").exitCode()).isZero();
        assertThat(plinth("getstripe", "--json", "/zipped").out()).contains("\"compression\":\"zstd:7\"");
        assertThat(plinth("setstripe", "--compress", "lz4:3", "/zipped").exitCode()).as("lz4 has no levels").isEqualTo(Main.EXIT_USAGE);
        assertThat(plinth("setstripe", "--compress", "zstd:40", "/zipped").exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(plinth("setstripe", "--compress", "gzip", "/zipped").exitCode()).isEqualTo(Main.EXIT_USAGE);
        assertThat(plinth("setstripe", "-c", "2", "/zipped").exitCode()).isZero();
        assertThat(plinth("getstripe", "--json", "/zipped").out()).as("other flags keep the compression")
                .contains("\"compression\":\"zstd:7\"").contains("\"stripe_count\":2");
        String text = "epoch 1 step 20 loss 0.125 tokens 4096\n".repeat(40_000);
        Path local = directory.resolve("log.txt");
        Files.writeString(local, text);
        assertThat(plinth("fs", "put", local.toString(), "/zipped/log.txt").exitCode()).isZero();
        String json = plinth("getstripe", "--json", "/zipped/log.txt").out();
        assertThat(json).contains("\"compression\":\"zstd:7\"").contains("\"logical_bytes\":" + text.length());
        long stored = Long.parseLong(json.replaceAll(".*\"stored_bytes\":(\\d+).*", "$1").strip());
        assertThat(stored).as("repetitive text takes a fraction of its size").isPositive().isLessThan(text.length() / 10);
        assertThat(plinth("getstripe", "/zipped/log.txt").out()).contains("plinth_compression: zstd:7").contains("plinth_stored_bytes:");
        Path back = directory.resolve("log-back.txt");
        assertThat(plinth("fs", "get", "/zipped/log.txt", back.toString()).exitCode()).isZero();
        assertThat(Files.readString(back)).isEqualTo(text);
        // compressed to plain and back, as migrate rewrites a file
        CliRun.Result plain = plinth("migrate", "--json", "--compress", "none", "/zipped/log.txt");
        assertThat(plain.exitCode()).as(plain.err()).isZero();
        assertThat(plinth("getstripe", "--json", "/zipped/log.txt").out()).contains("\"compression\":\"none\"");
        CliRun.Result lz4 = plinth("migrate", "--compress", "lz4", "--ec", "2+1", "-S", "64K", "/zipped/log.txt");
        assertThat(lz4.exitCode()).as(lz4.err()).isZero();
        assertThat(plinth("getstripe", "--json", "/zipped/log.txt").out()).contains("\"compression\":\"lz4\"").contains("\"redundancy\":\"ec\"");
        assertThat(plinth("fs", "get", "/zipped/log.txt", back.toString()).exitCode()).isZero();
        assertThat(Files.readString(back)).isEqualTo(text);
        assertThat(plinth("fs", "rm", "-r", "/zipped").exitCode()).isZero();
    }

    private static String writeSmallFile() {
        try {
            return Files.writeString(directory.resolve("small"), "small\n").toString();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void s3KeysAreManagedFromTheCli() throws Exception {
        Path secret = Files.writeString(directory.resolve("secret"), "a-secret-of-enough-length\n");
        Path credentials = directory.resolve("alice-credentials");
        CliRun.Result created = plinth("s3", "keys", "create", "--uid", "1500", "--groups", "20,30", "--access-key", "ALICEKEY",
                "--secret-key-file", secret.toString(), "--description", "alice's notebooks", "--credentials-file", credentials.toString());
        assertThat(created.exitCode()).as(created.err()).isZero();
        assertThat(created.out()).contains("aws_access_key_id = ALICEKEY").contains("acts as uid 1500, gid 1500, groups [20, 30]");
        assertThat(dev.plinth.gateway.S3Credentials.read(credentials)).isEqualTo(new dev.plinth.gateway.S3Credentials.KeyPair("ALICEKEY", "a-secret-of-enough-length"));
        assertThat(Files.getPosixFilePermissions(credentials)).containsExactlyInAnyOrder(java.nio.file.attribute.PosixFilePermission.OWNER_READ,
                java.nio.file.attribute.PosixFilePermission.OWNER_WRITE);
        CliRun.Result generated = plinth("s3", "keys", "create", "--uid", "1600", "--json");
        assertThat(generated.out()).contains("\"uid\":1600").contains("\"secret_access_key\":\"");
        CliRun.Result listed = plinth("s3", "keys", "list");
        assertThat(listed.out()).contains("ALICEKEY").contains("alice's notebooks").doesNotContain("a-secret-of-enough-length");
        assertThat(plinth("s3", "keys", "list", "--json").out()).contains("\"access_key_id\":\"ALICEKEY\"").doesNotContain("secret");
        assertThat(plinth("s3", "keys", "create", "--uid", "1", "--access-key", "ALICEKEY").err()).contains("file exists");
        assertThat(plinth("s3", "keys", "create", "--uid", "1", "--access-key", "bad key!").exitCode()).isEqualTo(Main.EXIT_FAILED);
        assertThat(plinth("s3", "keys", "delete", "ALICEKEY").exitCode()).isZero();
        assertThat(plinth("s3", "keys", "list").out()).doesNotContain("ALICEKEY");
        assertThat(plinth("s3", "keys", "delete", "ALICEKEY").err()).contains("no access key");
    }

    @Test
    void statusShowsNodesTargetsAndSpace() {
        CliRun.Result status = plinth("status");
        assertThat(status.exitCode()).as(status.err()).isZero();
        assertThat(status.out()).contains("NODE").contains("online").contains("TARGET").contains("pool default")
                .contains("inodes").contains("all nodes, targets and chains healthy");
        CliRun.Result json = plinth("status", "--json");
        assertThat(json.out()).contains("\"map_version\":").contains("\"targets\":[{\"target_id\":1")
                .contains("\"online\":true").contains("\"attention\":[]")
                .containsPattern("\"pools\":\\[\\{\"name\":\"default\",\"target_ids\":\\[[0-9, ]+\\],\"capacity_bytes\":[1-9][0-9]*,\"used_bytes\":[0-9]+,\"free_bytes\":[1-9]");
        String size = "[0-9.]+ [KMGTP]?i?B";
        assertThat(status.out()).containsPattern("pool default +" + size + " used of " + size + " \\([0-9]+%\\), " + size + " free");
        assertThat(plinth("pool", "list").out()).containsPattern("default +\\[[0-9, ]+\\] +used " + size + " of " + size + ", " + size + " free");
    }

    @Test
    void topShowsEveryTargetAndNode() {
        CliRun.Result byTarget = plinth("top", "-n", "2", "--interval", "0.2");
        assertThat(byTarget.exitCode()).as(byTarget.err()).isZero();
        assertThat(byTarget.out()).contains("plinth top").contains("READ/s").contains("target 1 (node 1)").contains("target 4 (node 1)");
        CliRun.Result byNode = plinth("top", "-n", "1", "--by", "node");
        assertThat(byNode.out()).contains("node 1 ").contains("online");
    }

}
