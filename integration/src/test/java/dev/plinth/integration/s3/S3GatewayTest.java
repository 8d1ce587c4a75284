package dev.plinth.integration.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.gateway.S3Credentials;
import dev.plinth.gateway.SigV4;
import dev.plinth.gateway.AccessKeys;
import dev.plinth.gateway.S3Gateway;
import dev.plinth.client.PlinthClient;
import dev.plinth.integration.MiniCluster;
import dev.plinth.wire.messages.MetaMessages;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import dev.plinth.wire.messages.MgmtMessages.CreateAccessKey;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.model.CommonPrefix;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.CreateMultipartUploadResponse;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.ListPartsResponse;
import software.amazon.awssdk.services.s3.model.MetadataDirective;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * The gateway's S3 semantics, driven by the AWS SDK for Java v2 against an in-process cluster:
 * buckets, objects, ranges, conditions, copies, listings with every paging form, multipart
 * uploads, batch deletes, signatures (header, presigned, streaming) and keys mapped to uids.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class S3GatewayTest {
    @TempDir
    static Path directory;

    private MiniCluster cluster;
    private PlinthClient plinth;
    private S3Client s3;
    private String endpoint;
    private final Random random = new Random(42);

    @BeforeAll
    void start() {
        // leases far longer than the clock is ever moved forward here, so no live client's session lapses
        cluster = MiniCluster.start(directory.resolve("data"), MiniCluster.testConfig().with("meta.session-lease-millis", "120000"));
        plinth = cluster.client();
        endpoint = S3Testing.endpoint(cluster);
        s3 = S3Testing.sdk(endpoint, S3Testing.ownerKey(cluster));
    }

    @AfterAll
    void stop() throws Exception {
        S3Testing.closeAll(s3, plinth, cluster);
    }

    private byte[] randomBytes(int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        return bytes;
    }

    private static String md5Hex(byte[] bytes) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("MD5").digest(bytes));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }

    private static String errorCode(Throwable e) {
        return ((S3Exception) e).awsErrorDetails().errorCode();
    }

    private byte[] get(String bucket, String key) {
        return s3.getObjectAsBytes(b -> b.bucket(bucket).key(key)).asByteArray();
    }

    @Test
    void bucketsAreTopLevelDirectories() {
        s3.createBucket(b -> b.bucket("buckets-a"));
        assertThat(plinth.stat("/buckets-a").isDirectory()).isTrue();
        plinth.mkdir("/made-by-mkdir", 0755);
        assertThat(s3.listBuckets().buckets()).extracting(software.amazon.awssdk.services.s3.model.Bucket::name)
                .contains("buckets-a", "made-by-mkdir");
        s3.headBucket(b -> b.bucket("buckets-a"));
        assertThat(s3.getBucketLocation(b -> b.bucket("buckets-a")).locationConstraintAsString()).isEmpty();
        s3.createBucket(b -> b.bucket("buckets-a")); // one's own bucket again: us-east-1 answers 200
        assertThatThrownBy(() -> s3.headBucket(b -> b.bucket("no-such-bucket"))).isInstanceOf(S3Exception.class)
                .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(404));
        s3.putObject(b -> b.bucket("buckets-a").key("x"), RequestBody.fromString("x"));
        assertThatThrownBy(() -> s3.deleteBucket(b -> b.bucket("buckets-a"))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("BucketNotEmpty"));
        s3.deleteObject(b -> b.bucket("buckets-a").key("x"));
        s3.deleteBucket(b -> b.bucket("buckets-a"));
        assertThat(plinth.exists("/buckets-a")).isFalse();
        assertThatThrownBy(() -> s3.listObjectsV2(b -> b.bucket("buckets-a"))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("NoSuchBucket"));
    }

    @Test
    void objectsRoundTripWithMetadataAndHeaders() {
        s3.createBucket(b -> b.bucket("objects"));
        byte[] data = randomBytes(3 * 1024 * 1024 + 17);
        String etag = s3.putObject(b -> b.bucket("objects").key("dir/sub/file.bin").contentType("application/x-test")
                .metadata(Map.of("origin", "unit-test", "shard", "7")).contentDisposition("attachment").cacheControl("no-cache"),
                RequestBody.fromBytes(data)).eTag();
        assertThat(etag).isEqualTo("\"" + md5Hex(data) + "\"");
        ResponseBytes<GetObjectResponse> got = s3.getObjectAsBytes(b -> b.bucket("objects").key("dir/sub/file.bin"));
        assertThat(got.asByteArray()).isEqualTo(data);
        assertThat(got.response().contentType()).isEqualTo("application/x-test");
        assertThat(got.response().metadata()).containsEntry("origin", "unit-test").containsEntry("shard", "7");
        assertThat(got.response().contentDisposition()).isEqualTo("attachment");
        assertThat(got.response().cacheControl()).isEqualTo("no-cache");
        HeadObjectResponse head = s3.headObject(b -> b.bucket("objects").key("dir/sub/file.bin"));
        assertThat(head.contentLength()).isEqualTo(data.length);
        assertThat(head.eTag()).isEqualTo(etag);
        // the file is a plain file in the namespace
        assertThat(plinth.stat("/objects/dir/sub/file.bin").sizeBytes()).isEqualTo(data.length);
        // overwrite, then delete: the empty directories above it go too
        s3.putObject(b -> b.bucket("objects").key("dir/sub/file.bin"), RequestBody.fromString("v2"));
        assertThat(get("objects", "dir/sub/file.bin")).isEqualTo("v2".getBytes(StandardCharsets.UTF_8));
        s3.deleteObject(b -> b.bucket("objects").key("dir/sub/file.bin"));
        assertThat(plinth.exists("/objects/dir")).isFalse();
        assertThatThrownBy(() -> get("objects", "dir/sub/file.bin")).satisfies(e -> assertThat(errorCode(e)).isEqualTo("NoSuchKey"));
        assertThatThrownBy(() -> get("no-such-bucket", "x")).satisfies(e -> assertThat(errorCode(e)).isEqualTo("NoSuchBucket"));
        s3.deleteObject(b -> b.bucket("objects").key("never-existed")); // S3 answers 204 for absent keys
        // an empty object, and a "folder" key
        s3.putObject(b -> b.bucket("objects").key("empty"), RequestBody.empty());
        assertThat(get("objects", "empty")).isEmpty();
        s3.putObject(b -> b.bucket("objects").key("folder/"), RequestBody.empty());
        assertThat(plinth.stat("/objects/folder").isDirectory()).isTrue();
        assertThat(s3.listObjectsV2(b -> b.bucket("objects")).contents()).extracting(S3Object::key).containsExactly("empty", "folder/");
    }

    @Test
    void keysWithSpacesUnicodeAndReservedCharacters() {
        s3.createBucket(b -> b.bucket("names"));
        List<String> keys = List.of("a b/c d.txt", "ünï/cödé/文件.bin", "plus+and&amp=eq?.txt", "percent%20literal", "tilde~star*'quote'",
                "emoji \uD83D\uDE00/x", "semi;colon,comma:colon@at$dollar!bang(paren)[br]");
        for (String key : keys) {
            s3.putObject(b -> b.bucket("names").key(key), RequestBody.fromString(key));
        }
        for (String key : keys) {
            assertThat(new String(get("names", key), StandardCharsets.UTF_8)).isEqualTo(key);
        }
        assertThat(plinth.exists("/names/ünï/cödé/文件.bin")).isTrue();
        TreeSet<String> expected = new TreeSet<>(S3Testing::keyOrder);
        expected.addAll(keys);
        assertThat(s3.listObjectsV2(b -> b.bucket("names")).contents()).extracting(S3Object::key).containsExactlyElementsOf(expected);
        assertThat(s3.listObjectsV2(b -> b.bucket("names").encodingType("url")).contents()).hasSize(keys.size());
    }

    /**
     * A ranged GET of a large object reads its range from the targets and no more: a reader that
     * went on sequentially fetched a whole read-ahead window (16 MiB) past it, so the parts of a
     * parallel download (the AWS CLI's 8 MiB ranges) read the object about three times over.
     */
    @Test
    void aRangedGetReadsItsRangeAndNoMore() {
        s3.createBucket(b -> b.bucket("ranged"));
        byte[] data = randomBytes(32 << 20);
        s3.putObject(b -> b.bucket("ranged").key("big"), RequestBody.fromBytes(data));
        long before = targetBytesRead();
        byte[] got = s3.getObjectAsBytes(b -> b.bucket("ranged").key("big").range("bytes=" + (8 << 20) + "-" + ((11 << 20) - 1))).asByteArray();
        assertThat(got).isEqualTo(java.util.Arrays.copyOfRange(data, 8 << 20, 11 << 20));
        assertThat(targetBytesRead() - before).isEqualTo(3 << 20);
    }

    /**
     * GETs of a large object change no metadata: an open and a close were two Raft entries per
     * GET (and one answered 304 or 412 opened the file too), where the answer needs only the
     * lookup. The file is read without an open ({@code ReadWithoutOpenTest}).
     */
    @Test
    void getsOfALargeObjectChangeNoMetadata() {
        s3.createBucket(b -> b.bucket("conditional"));
        byte[] data = randomBytes(3 << 20);
        String etag = s3.putObject(b -> b.bucket("conditional").key("big"), RequestBody.fromBytes(data)).eTag();
        long before = metadataChanges();
        for (int i = 0; i < 20; i++) {
            assertThatThrownBy(() -> s3.getObject(b -> b.bucket("conditional").key("big").ifNoneMatch(etag)))
                    .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(304));
            assertThatThrownBy(() -> s3.getObject(b -> b.bucket("conditional").key("big").ifMatch("\"0123\"")))
                    .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(412));
            assertThat(s3.getObjectAsBytes(b -> b.bucket("conditional").key("big").ifMatch(etag)).asByteArray()).isEqualTo(data);
            assertThat(s3.getObjectAsBytes(b -> b.bucket("conditional").key("big").range("bytes=1000-2000000")).asByteArray())
                    .isEqualTo(java.util.Arrays.copyOfRange(data, 1000, 2_000_001));
        }
        assertThat(metadataChanges() - before).as("entries for 80 GETs (a session renewal may fall in)").isLessThan(8);
        // and a GET over the MDT's part asks the metadata service once: its first bytes come with the lookup
        byte[] medium = randomBytes(256 << 10);
        s3.putObject(b -> b.bucket("conditional").key("medium"), RequestBody.fromBytes(medium));
        double lookups = metadataRequests("ResolvePath");
        double partReads = metadataRequests("ReadInline");
        assertThat(s3.getObjectAsBytes(b -> b.bucket("conditional").key("medium")).asByteArray()).isEqualTo(medium);
        assertThat(s3.getObjectAsBytes(b -> b.bucket("conditional").key("big")).asByteArray()).isEqualTo(data);
        assertThat(metadataRequests("ResolvePath") - lookups).isEqualTo(2);
        assertThat(metadataRequests("ReadInline") - partReads).isZero();
        assertThat(metadataRequests("GetAttr")).isZero();
    }

    /**
     * A GET or HEAD whose answer is all in memory is answered on the network event loop (design note
     * 71); one that needs the targets, a listing or a record not yet cached goes to a thread and is
     * answered the same, with one lookup.
     */
    @Test
    void requestsThatNeedNoWaitingAreAnsweredOnTheEventLoop() {
        // answered from memory on the event loop only where the gateway's lookups are in-JVM calls: over TCP every one waits
        org.junit.jupiter.api.Assumptions.assumeTrue(MiniCluster.inProcessRpc(), "needs in-JVM calls");
        s3.createBucket(b -> b.bucket("quick"));
        byte[] small = randomBytes(3000);
        byte[] large = randomBytes(3 << 20);
        s3.putObject(b -> b.bucket("quick").key("small"), RequestBody.fromBytes(small));
        s3.putObject(b -> b.bucket("quick").key("large"), RequestBody.fromBytes(large));
        double answeredBefore = cluster.metric("plinth_s3_event_loop_answers_total", 0);
        double lookupsBefore = metadataRequests("ResolvePath");
        for (int round = 0; round < 3; round++) {
            assertThat(s3.getObjectAsBytes(b -> b.bucket("quick").key("small")).asByteArray()).isEqualTo(small);
            assertThat(s3.headObject(b -> b.bucket("quick").key("small")).contentLength()).isEqualTo(small.length);
            assertThatThrownBy(() -> s3.getObject(b -> b.bucket("quick").key("missing")))
                    .isInstanceOf(software.amazon.awssdk.services.s3.model.NoSuchKeyException.class);
            assertThat(s3.getObjectAsBytes(b -> b.bucket("quick").key("large")).asByteArray()).isEqualTo(large);
            assertThat(s3.listObjectsV2(b -> b.bucket("quick")).contents()).hasSize(2);
        }
        // from the second round on the small GET, the HEAD and the missing key's GET need nothing that waits (the
        // HEAD from the first, after its GET); the large GET and the listing never. A refresh of the access keys
        // (every 5 s) sends one request to a thread.
        assertThat(cluster.metric("plinth_s3_event_loop_answers_total", 0) - answeredBefore).isBetween(5.0, 9.0);
        // one successful lookup per request, as on a thread alone (the missing key's is its bucket's): a large GET
        // that starts on the event loop goes on on its thread with that lookup, and a listing goes there at once
        assertThat(metadataRequests("ResolvePath") - lookupsBefore).as("lookups").isEqualTo(15);
    }

    private double metadataRequests(String message) {
        return cluster.metric("plinth_rpc_server_requests_total{code=\"OK\",message=\"" + message + "\"}", 0);
    }

    /**
     * A GET read without an open ({@code PlinthClient#openLookedUp}) that is still going seconds
     * after its lookup opens the object's file then: a slow reader gets the whole object, and one
     * whose object was removed meanwhile gets a short body (the connection is cut), never bytes
     * that may have been freed.
     */
    @Test
    void aSlowGetGetsItsObjectOrACutConnection() throws Exception {
        s3.createBucket(b -> b.bucket("slow"));
        byte[] data = randomBytes(32 << 20);
        s3.putObject(b -> b.bucket("slow").key("kept"), RequestBody.fromBytes(data));
        s3.putObject(b -> b.bucket("slow").key("removed"), RequestBody.fromBytes(data));
        Duration pause = Duration.ofMillis(dev.plinth.wire.messages.MetaMessages.REMOVED_FILE_KEPT_MILLIS / 2 + 1000);
        try (var kept = s3.getObject(b -> b.bucket("slow").key("kept"))) {
            byte[] head = kept.readNBytes(1 << 20);
            cluster.clock().advance(pause);
            byte[] rest = kept.readAllBytes();
            assertThat(head.length + rest.length).isEqualTo(data.length);
            assertThat(rest).isEqualTo(java.util.Arrays.copyOfRange(data, 1 << 20, data.length));
        }
        try (var removed = s3.getObject(b -> b.bucket("slow").key("removed"))) {
            byte[] head = removed.readNBytes(1 << 20);
            assertThat(head).isEqualTo(java.util.Arrays.copyOf(data, 1 << 20));
            s3.deleteObject(b -> b.bucket("slow").key("removed"));
            cluster.clock().advance(pause);
            assertThatThrownBy(removed::readAllBytes).as("the rest of a removed object after its chunks may be gone");
        }
    }

    /** Entries the MDT has applied: every metadata change is one, or shares one with others. */
    private long metadataChanges() {
        return (long) cluster.metric("plinth_meta_raft_applied_index{mdt=\"0\"}");
    }

    private long targetBytesRead() {
        return cluster.server().storage().usage().stream().mapToLong(u -> u.readBytes()).sum();
    }

    @Test
    void rangesAndConditions() {
        s3.createBucket(b -> b.bucket("ranges"));
        byte[] data = randomBytes(100_000);
        String etag = s3.putObject(b -> b.bucket("ranges").key("r"), RequestBody.fromBytes(data)).eTag();
        ResponseBytes<GetObjectResponse> first = s3.getObjectAsBytes(b -> b.bucket("ranges").key("r").range("bytes=0-9"));
        assertThat(first.asByteArray()).isEqualTo(java.util.Arrays.copyOfRange(data, 0, 10));
        assertThat(first.response().contentRange()).isEqualTo("bytes 0-9/100000");
        assertThat(s3.getObjectAsBytes(b -> b.bucket("ranges").key("r").range("bytes=-100")).asByteArray())
                .isEqualTo(java.util.Arrays.copyOfRange(data, 99_900, 100_000));
        assertThat(s3.getObjectAsBytes(b -> b.bucket("ranges").key("r").range("bytes=99990-")).asByteArray())
                .isEqualTo(java.util.Arrays.copyOfRange(data, 99_990, 100_000));
        assertThat(s3.getObjectAsBytes(b -> b.bucket("ranges").key("r").range("bytes=50000-200000")).asByteArray())
                .isEqualTo(java.util.Arrays.copyOfRange(data, 50_000, 100_000));
        assertThatThrownBy(() -> s3.getObject(b -> b.bucket("ranges").key("r").range("bytes=100000-")))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidRange"))
                .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(416));

        assertThat(s3.getObjectAsBytes(b -> b.bucket("ranges").key("r").ifMatch(etag)).asByteArray()).hasSize(100_000);
        assertThatThrownBy(() -> s3.getObject(b -> b.bucket("ranges").key("r").ifMatch("\"0123\"")))
                .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(412));
        assertThatThrownBy(() -> s3.getObject(b -> b.bucket("ranges").key("r").ifNoneMatch(etag)))
                .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(304));
        Instant future = Instant.now().plusSeconds(3600);
        Instant past = Instant.now().minusSeconds(3600);
        assertThatThrownBy(() -> s3.getObject(b -> b.bucket("ranges").key("r").ifModifiedSince(future)))
                .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(304));
        assertThat(s3.getObjectAsBytes(b -> b.bucket("ranges").key("r").ifModifiedSince(past)).asByteArray()).hasSize(100_000);
        assertThatThrownBy(() -> s3.getObject(b -> b.bucket("ranges").key("r").ifUnmodifiedSince(past)))
                .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(412));
        assertThat(s3.headObject(b -> b.bucket("ranges").key("r").ifUnmodifiedSince(future)).contentLength()).isEqualTo(100_000);
        // If-None-Match: * on PUT creates only when absent
        assertThatThrownBy(() -> s3.putObject(b -> b.bucket("ranges").key("r").ifNoneMatch("*"), RequestBody.fromString("no")))
                .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(412));
        s3.putObject(b -> b.bucket("ranges").key("new").ifNoneMatch("*"), RequestBody.fromString("yes"));
        assertThat(get("ranges", "r")).isEqualTo(data);
    }

    @Test
    void copyKeepsOrReplacesMetadata() {
        s3.createBucket(b -> b.bucket("copies"));
        s3.createBucket(b -> b.bucket("copies-to"));
        byte[] data = randomBytes(2_000_000);
        s3.putObject(b -> b.bucket("copies").key("src/a").contentType("text/x-a").metadata(Map.of("k", "v")), RequestBody.fromBytes(data));
        String etag = s3.copyObject(b -> b.sourceBucket("copies").sourceKey("src/a").destinationBucket("copies-to").destinationKey("dst/a"))
                .copyObjectResult().eTag();
        assertThat(etag).isEqualTo("\"" + md5Hex(data) + "\"");
        ResponseBytes<GetObjectResponse> copy = s3.getObjectAsBytes(b -> b.bucket("copies-to").key("dst/a"));
        assertThat(copy.asByteArray()).isEqualTo(data);
        assertThat(copy.response().contentType()).isEqualTo("text/x-a");
        assertThat(copy.response().metadata()).containsEntry("k", "v");
        s3.copyObject(b -> b.sourceBucket("copies").sourceKey("src/a").destinationBucket("copies").destinationKey("src/a")
                .metadataDirective(MetadataDirective.REPLACE).contentType("text/x-b").metadata(Map.of("k2", "v2")));
        HeadObjectResponse replaced = s3.headObject(b -> b.bucket("copies").key("src/a"));
        assertThat(replaced.contentType()).isEqualTo("text/x-b");
        assertThat(replaced.metadata()).containsExactly(Map.entry("k2", "v2"));
        assertThat(get("copies", "src/a")).isEqualTo(data);
        assertThatThrownBy(() -> s3.copyObject(b -> b.sourceBucket("copies").sourceKey("src/a").destinationBucket("copies").destinationKey("src/a")))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidRequest"));
        assertThatThrownBy(() -> s3.copyObject(b -> b.sourceBucket("copies").sourceKey("missing").destinationBucket("copies").destinationKey("x")))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("NoSuchKey"));
    }

    @Test
    void listingsPageInS3OrderWithEveryParameter() {
        s3.createBucket(b -> b.bucket("listing"));
        List<String> keys = new ArrayList<>();
        for (String top : List.of("a", "a-b", "a.c", "b", "dir", "dir-x", "z")) {
            keys.add(top);
        }
        for (int i = 0; i < 12; i++) {
            keys.add("dir0/f" + i);
            keys.add("dir0/sub/g" + i);
        }
        keys.add("dir0/sub-1");
        keys.add("dir1/x/y/z");
        // "dir" is a file and "dir0/" a directory: '0' sorts after '-' and '.'; "a-b" and "a.c" sort before "a/"
        for (String key : keys) {
            s3.putObject(b -> b.bucket("listing").key(key), RequestBody.fromString(key));
        }
        TreeSet<String> sorted = new TreeSet<>(S3Testing::keyOrder);
        sorted.addAll(keys);
        List<String> expected = new ArrayList<>(sorted);

        // V2, page by page
        List<String> seen = new ArrayList<>();
        String token = null;
        int pages = 0;
        do {
            String continuation = token;
            ListObjectsV2Response page = s3.listObjectsV2(b -> b.bucket("listing").maxKeys(7).continuationToken(continuation).fetchOwner(true));
            page.contents().forEach(o -> seen.add(o.key()));
            assertThat(page.contents()).allSatisfy(o -> assertThat(o.owner()).isNotNull());
            assertThat(page.keyCount()).isEqualTo(page.contents().size());
            token = page.isTruncated() ? page.nextContinuationToken() : null;
            pages++;
        } while (token != null && pages < 100);
        assertThat(seen).isEqualTo(expected);
        assertThat(pages).isEqualTo((expected.size() + 6) / 7);

        // delimiter: common prefixes at the top, without walking their subtrees
        ListObjectsV2Response top = s3.listObjectsV2(b -> b.bucket("listing").delimiter("/"));
        assertThat(top.contents()).extracting(S3Object::key).containsExactly("a", "a-b", "a.c", "b", "dir", "dir-x", "z");
        assertThat(top.commonPrefixes()).extracting(CommonPrefix::prefix).containsExactly("dir0/", "dir1/");
        ListObjectsV2Response inDir = s3.listObjectsV2(b -> b.bucket("listing").prefix("dir0/").delimiter("/").maxKeys(5));
        assertThat(inDir.contents()).extracting(S3Object::key).containsExactly("dir0/f0", "dir0/f1", "dir0/f10", "dir0/f11", "dir0/f2");
        assertThat(inDir.isTruncated()).isTrue();
        ListObjectsV2Response rest = s3.listObjectsV2(b -> b.bucket("listing").prefix("dir0/").delimiter("/")
                .continuationToken(inDir.nextContinuationToken()));
        assertThat(rest.contents()).extracting(S3Object::key).containsExactly("dir0/f3", "dir0/f4", "dir0/f5", "dir0/f6", "dir0/f7",
                "dir0/f8", "dir0/f9", "dir0/sub-1");
        assertThat(rest.commonPrefixes()).extracting(CommonPrefix::prefix).containsExactly("dir0/sub/");
        // a prefix that is not a directory boundary, and start-after
        assertThat(s3.listObjectsV2(b -> b.bucket("listing").prefix("dir0/sub")).contents()).hasSize(13);
        assertThat(s3.listObjectsV2(b -> b.bucket("listing").prefix("a")).contents()).extracting(S3Object::key).containsExactly("a", "a-b", "a.c");
        assertThat(s3.listObjectsV2(b -> b.bucket("listing").startAfter("dir0/sub/g5")).contents()).extracting(S3Object::key)
                .isEqualTo(expected.subList(expected.indexOf("dir0/sub/g5") + 1, expected.size()));
        assertThat(s3.listObjectsV2(b -> b.bucket("listing").prefix("nothing")).contents()).isEmpty();
        assertThat(s3.listObjectsV2(b -> b.bucket("listing").maxKeys(0)).contents()).isEmpty();

        // V1 with markers
        List<String> seenV1 = new ArrayList<>();
        String marker = null;
        for (int i = 0; i < 100; i++) {
            String from = marker;
            ListObjectsResponse page = s3.listObjects(b -> b.bucket("listing").maxKeys(10).marker(from));
            page.contents().forEach(o -> seenV1.add(o.key()));
            if (!page.isTruncated()) {
                break;
            }
            marker = page.nextMarker() != null ? page.nextMarker() : page.contents().getLast().key();
        }
        assertThat(seenV1).isEqualTo(expected);
        // changes between pages: a key added after the cursor shows up, one before does not disturb it
        ListObjectsV2Response firstPage = s3.listObjectsV2(b -> b.bucket("listing").maxKeys(3));
        s3.putObject(b -> b.bucket("listing").key("zz-late"), RequestBody.fromString("late"));
        s3.putObject(b -> b.bucket("listing").key("0-early"), RequestBody.fromString("early"));
        List<String> afterChange = new ArrayList<>(firstPage.contents().stream().map(S3Object::key).toList());
        afterChange.addAll(s3.listObjectsV2(b -> b.bucket("listing").continuationToken(firstPage.nextContinuationToken())).contents()
                .stream().map(S3Object::key).toList());
        assertThat(afterChange).doesNotHaveDuplicates().contains("zz-late").doesNotContain("0-early");
    }

    @Test
    void multipartUploadsAssembleInPartOrder() throws Exception {
        s3.createBucket(b -> b.bucket("multipart"));
        byte[] copySource = randomBytes(6 << 20);
        s3.putObject(b -> b.bucket("multipart").key("source"), RequestBody.fromBytes(copySource));
        CreateMultipartUploadResponse created = s3.createMultipartUpload(b -> b.bucket("multipart").key("big/object").contentType("video/x-test")
                .metadata(Map.of("m", "1")));
        String uploadId = created.uploadId();
        byte[] part1 = randomBytes(5 << 20);
        byte[] part3 = randomBytes(1 << 20);
        // parts arrive out of order, one is a copy of a range of another object, and one is replaced
        String etag3 = s3.uploadPart(b -> b.bucket("multipart").key("big/object").uploadId(uploadId).partNumber(3), RequestBody.fromBytes(part3)).eTag();
        s3.uploadPart(b -> b.bucket("multipart").key("big/object").uploadId(uploadId).partNumber(1), RequestBody.fromBytes(randomBytes(5 << 20)));
        String etag1 = s3.uploadPart(b -> b.bucket("multipart").key("big/object").uploadId(uploadId).partNumber(1), RequestBody.fromBytes(part1)).eTag();
        String etag2 = s3.uploadPartCopy(b -> b.sourceBucket("multipart").sourceKey("source").copySourceRange("bytes=1000-" + (1000 + (5 << 20) - 1))
                .destinationBucket("multipart").destinationKey("big/object").uploadId(uploadId).partNumber(2)).copyPartResult().eTag();
        byte[] part2 = java.util.Arrays.copyOfRange(copySource, 1000, 1000 + (5 << 20));
        assertThat(etag2).isEqualTo("\"" + md5Hex(part2) + "\"");

        ListPartsResponse parts = s3.listParts(b -> b.bucket("multipart").key("big/object").uploadId(uploadId));
        assertThat(parts.parts()).extracting(p -> p.partNumber()).containsExactly(1, 2, 3);
        assertThat(parts.parts()).extracting(p -> p.size()).containsExactly((long) part1.length, (long) part2.length, (long) part3.length);
        assertThat(s3.listMultipartUploads(b -> b.bucket("multipart")).uploads()).extracting(u -> u.uploadId()).contains(uploadId);
        // the upload is invisible as an object until it completes
        assertThat(s3.listObjectsV2(b -> b.bucket("multipart")).contents()).extracting(S3Object::key).containsExactly("source");

        assertThatThrownBy(() -> s3.completeMultipartUpload(b -> b.bucket("multipart").key("big/object").uploadId(uploadId)
                .multipartUpload(m -> m.parts(CompletedPart.builder().partNumber(1).eTag("\"00000000000000000000000000000000\"").build()))))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidPart"));
        assertThatThrownBy(() -> s3.completeMultipartUpload(b -> b.bucket("multipart").key("big/object").uploadId(uploadId)
                .multipartUpload(m -> m.parts(CompletedPart.builder().partNumber(3).eTag(etag3).build(),
                        CompletedPart.builder().partNumber(1).eTag(etag1).build()))))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidPartOrder"));
        assertThatThrownBy(() -> s3.completeMultipartUpload(b -> b.bucket("multipart").key("big/object").uploadId(uploadId)
                .multipartUpload(m -> m.parts(CompletedPart.builder().partNumber(3).eTag(etag3).build(),
                        CompletedPart.builder().partNumber(4).eTag(etag3).build()))))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidPart"));

        String etag = s3.completeMultipartUpload(b -> b.bucket("multipart").key("big/object").uploadId(uploadId)
                .multipartUpload(m -> m.parts(CompletedPart.builder().partNumber(1).eTag(etag1).build(),
                        CompletedPart.builder().partNumber(2).eTag(etag2).build(), CompletedPart.builder().partNumber(3).eTag(etag3).build())))
                .eTag();
        MessageDigest md5s = MessageDigest.getInstance("MD5");
        for (byte[] part : List.of(part1, part2, part3)) {
            md5s.update(MessageDigest.getInstance("MD5").digest(part));
        }
        assertThat(etag).isEqualTo("\"" + HexFormat.of().formatHex(md5s.digest()) + "-3\"");
        ResponseBytes<GetObjectResponse> whole = s3.getObjectAsBytes(b -> b.bucket("multipart").key("big/object"));
        java.io.ByteArrayOutputStream expected = new java.io.ByteArrayOutputStream();
        expected.writeBytes(part1);
        expected.writeBytes(part2);
        expected.writeBytes(part3);
        assertThat(whole.asByteArray()).isEqualTo(expected.toByteArray());
        assertThat(whole.response().eTag()).isEqualTo(etag);
        assertThat(whole.response().contentType()).isEqualTo("video/x-test");
        assertThat(whole.response().metadata()).containsEntry("m", "1");
        assertThatThrownBy(() -> s3.listParts(b -> b.bucket("multipart").key("big/object").uploadId(uploadId)))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("NoSuchUpload"));

        // a small part that is not the last is refused at completion; an aborted upload leaves nothing
        String small = s3.createMultipartUpload(b -> b.bucket("multipart").key("small")).uploadId();
        String smallEtag = s3.uploadPart(b -> b.bucket("multipart").key("small").uploadId(small).partNumber(1), RequestBody.fromString("tiny")).eTag();
        assertThatThrownBy(() -> s3.completeMultipartUpload(b -> b.bucket("multipart").key("small").uploadId(small)
                .multipartUpload(m -> m.parts(CompletedPart.builder().partNumber(1).eTag(smallEtag).build(),
                        CompletedPart.builder().partNumber(2).eTag(smallEtag).build()))))
                .satisfies(e -> assertThat(errorCode(e)).isIn("EntityTooSmall", "InvalidPart"));
        s3.abortMultipartUpload(b -> b.bucket("multipart").key("small").uploadId(small));
        assertThat(s3.listMultipartUploads(b -> b.bucket("multipart")).uploads()).isEmpty();
        // many uploads page by key and upload id
        List<String> started = new ArrayList<>();
        for (int i = 0; i < 7; i++) {
            String uploadKey = "paged/" + (i % 3);
            started.add(uploadKey + " " + s3.createMultipartUpload(b -> b.bucket("multipart").key(uploadKey)).uploadId());
        }
        started.sort(null);
        List<String> pagedThrough = new ArrayList<>();
        String keyMarker = null;
        String idMarker = null;
        for (int page = 0; page < 10; page++) {
            String key0 = keyMarker;
            String id0 = idMarker;
            var listed = s3.listMultipartUploads(b -> b.bucket("multipart").prefix("paged/").maxUploads(3).keyMarker(key0).uploadIdMarker(id0));
            listed.uploads().forEach(u -> pagedThrough.add(u.key() + " " + u.uploadId()));
            if (!listed.isTruncated()) {
                break;
            }
            keyMarker = listed.nextKeyMarker();
            idMarker = listed.nextUploadIdMarker();
        }
        assertThat(pagedThrough).isEqualTo(started);
        for (String upload : started) {
            s3.abortMultipartUpload(b -> b.bucket("multipart").key(upload.split(" ")[0]).uploadId(upload.split(" ")[1]));
        }
        assertThatThrownBy(() -> s3.uploadPart(b -> b.bucket("multipart").key("small").uploadId(small).partNumber(2), RequestBody.fromString("x")))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("NoSuchUpload"));
        s3.deleteObject(b -> b.bucket("multipart").key("source"));
        s3.deleteObject(b -> b.bucket("multipart").key("big/object"));
        s3.deleteBucket(b -> b.bucket("multipart")); // no hidden upload directories keep it from being empty
    }

    @Test
    void deleteObjectsInOneRequest() {
        s3.createBucket(b -> b.bucket("batch"));
        List<ObjectIdentifier> identifiers = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            String key = "d" + (i % 5) + "/k" + i;
            s3.putObject(b -> b.bucket("batch").key(key), RequestBody.fromString(key));
            identifiers.add(ObjectIdentifier.builder().key(key).build());
        }
        identifiers.add(ObjectIdentifier.builder().key("absent").build());
        DeleteObjectsResponse response = s3.deleteObjects(b -> b.bucket("batch").delete(Delete.builder().objects(identifiers).build()));
        assertThat(response.deleted()).hasSize(51);
        assertThat(response.errors()).isEmpty();
        assertThat(s3.listObjectsV2(b -> b.bucket("batch")).contents()).isEmpty();
        DeleteObjectsResponse quiet = s3.deleteObjects(b -> b.bucket("batch").delete(Delete.builder().quiet(true)
                .objects(ObjectIdentifier.builder().key("../escape").build(), ObjectIdentifier.builder().key("gone").build()).build()));
        assertThat(quiet.deleted()).isEmpty();
        assertThat(quiet.errors()).extracting(e -> e.key()).containsExactly("../escape");
        // keys are byte strings: "_ " is not "_" (spaces were trimmed, deleting another object), and " " is a key
        for (String key : List.of("_", "_ ", " ", " lead", "tab\t")) {
            s3.putObject(b -> b.bucket("batch").key(key), RequestBody.fromString(key));
        }
        DeleteObjectsResponse spaced = s3.deleteObjects(b -> b.bucket("batch").delete(Delete.builder()
                .objects(ObjectIdentifier.builder().key("_ ").build(), ObjectIdentifier.builder().key(" ").build(),
                        ObjectIdentifier.builder().key("tab\t").build()).build()));
        assertThat(spaced.errors()).isEmpty();
        assertThat(spaced.deleted()).extracting(d -> d.key()).containsExactly("_ ", " ", "tab\t");
        assertThat(s3.listObjectsV2(b -> b.bucket("batch")).contents()).extracting(S3Object::key).containsExactly(" lead", "_");
    }

    @Test
    void signaturesPresignedUrlsAndUnknownKeys() throws Exception {
        s3.createBucket(b -> b.bucket("auth"));
        s3.putObject(b -> b.bucket("auth").key("secret.txt"), RequestBody.fromString("for your eyes"));
        S3Credentials.KeyPair owner = S3Testing.ownerKey(cluster);
        try (S3Client wrongSecret = S3Testing.sdk(endpoint, new S3Credentials.KeyPair(owner.accessKeyId(), "not-the-secret"));
             S3Client unknown = S3Testing.sdk(endpoint, new S3Credentials.KeyPair("NOSUCHKEY", "whatever-secret"))) {
            assertThatThrownBy(() -> wrongSecret.getObject(b -> b.bucket("auth").key("secret.txt")))
                    .satisfies(e -> assertThat(errorCode(e)).isEqualTo("SignatureDoesNotMatch"));
            assertThatThrownBy(() -> wrongSecret.putObject(b -> b.bucket("auth").key("w"), RequestBody.fromString("w")))
                    .satisfies(e -> assertThat(errorCode(e)).isEqualTo("SignatureDoesNotMatch"));
            assertThatThrownBy(() -> unknown.listBuckets()).satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidAccessKeyId"));
        }
        HttpClient http = HttpClient.newHttpClient();
        HttpResponse<String> anonymous = http.send(HttpRequest.newBuilder(URI.create(endpoint + "/auth/secret.txt")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(anonymous.statusCode()).isEqualTo(403);
        assertThat(anonymous.body()).contains("<Code>AccessDenied</Code>");

        try (S3Presigner presigner = S3Presigner.builder().endpointOverride(URI.create(endpoint)).region(Region.US_EAST_1)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(owner.accessKeyId(), owner.secretKey())))
                .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build()).build()) {
            URI get = presigner.presignGetObject(p -> p.signatureDuration(Duration.ofMinutes(5))
                    .getObjectRequest(g -> g.bucket("auth").key("secret.txt"))).url().toURI();
            HttpResponse<String> fetched = http.send(HttpRequest.newBuilder(get).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(fetched.statusCode()).isEqualTo(200);
            assertThat(fetched.body()).isEqualTo("for your eyes");
            URI put = presigner.presignPutObject(p -> p.signatureDuration(Duration.ofMinutes(5))
                    .putObjectRequest(g -> g.bucket("auth").key("uploaded.txt"))).url().toURI();
            HttpResponse<String> uploaded = http.send(HttpRequest.newBuilder(put).PUT(HttpRequest.BodyPublishers.ofString("via presigned PUT")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(uploaded.statusCode()).isEqualTo(200);
            assertThat(get("auth", "uploaded.txt")).isEqualTo("via presigned PUT".getBytes(StandardCharsets.UTF_8));
            // a changed parameter breaks the signature; an expired URL is refused
            HttpResponse<String> tampered = http.send(HttpRequest.newBuilder(URI.create(get.toString().replace("secret.txt", "uploaded.txt"))).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(tampered.body()).contains("SignatureDoesNotMatch");
            URI shortLived = presigner.presignGetObject(p -> p.signatureDuration(Duration.ofSeconds(1))
                    .getObjectRequest(g -> g.bucket("auth").key("secret.txt"))).url().toURI();
            cluster.clock().advance(Duration.ofMillis(1_100)); // past the URL's one second, on the gateway's clock
            HttpResponse<String> expired = http.send(HttpRequest.newBuilder(shortLived).build(), HttpResponse.BodyHandlers.ofString());
            assertThat(expired.statusCode()).isEqualTo(403);
            assertThat(expired.body()).contains("<Code>AccessDenied</Code>").contains("expired");
        }
    }

    @Test
    void keysActAsTheirUidUnderPosixPermissions() {
        AccessKey alice = plinth.createAccessKey(new CreateAccessKey(null, null, 4242, 4242, List.of(), "alice"));
        s3.createBucket(b -> b.bucket("shared"));
        // private to its key until its modes say otherwise (S3AccessTest); here it is made readable, as through the mount
        plinth.setAttr(plinth.stat("/shared").inodeId(), MetaMessages.SET_MODE, 0755, 0, 0, 0, 0, 0);
        s3.putObject(b -> b.bucket("shared").key("readme"), RequestBody.fromString("root's"));
        try (S3Client asAlice = S3Testing.sdk(endpoint, new S3Credentials.KeyPair(alice.accessKeyId(), alice.secretKey()))) {
            assertThat(asAlice.getObjectAsBytes(b -> b.bucket("shared").key("readme")).asUtf8String()).isEqualTo("root's");
            assertThatThrownBy(() -> asAlice.putObject(b -> b.bucket("shared").key("mine"), RequestBody.fromString("alice")))
                    .satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
            assertThatThrownBy(() -> asAlice.deleteObject(b -> b.bucket("shared").key("readme")))
                    .satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
            s3.putObject(b -> b.bucket("shared").key("private"), RequestBody.fromString("root only"));
            plinth.setAttr(plinth.stat("/shared/private").inodeId(), MetaMessages.SET_MODE, 0600, 0, 0, 0, 0, 0);
            assertThatThrownBy(() -> asAlice.headObject(b -> b.bucket("shared").key("private")))
                    .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(403));
            assertThatThrownBy(() -> asAlice.getObject(b -> b.bucket("shared").key("private")))
                    .satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
            // a large object's conditions are checked before its open: they tell nothing to a caller who may not read it
            s3.putObject(b -> b.bucket("shared").key("large-private"), RequestBody.fromBytes(randomBytes(2 << 20)));
            plinth.setAttr(plinth.stat("/shared/large-private").inodeId(), MetaMessages.SET_MODE, 0600, 0, 0, 0, 0, 0);
            assertThatThrownBy(() -> asAlice.getObject(b -> b.bucket("shared").key("large-private").ifMatch("\"0123\"")))
                    .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(403));
            assertThatThrownBy(() -> asAlice.getObject(b -> b.bucket("shared").key("large-private").ifModifiedSince(Instant.now().plusSeconds(3600))))
                    .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(403));
            assertThatThrownBy(() -> asAlice.getObject(b -> b.bucket("shared").key("large-private")))
                    .satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
            Attributes bucket = plinth.stat("/shared");
            plinth.setAttr(bucket.inodeId(), MetaMessages.SET_MODE, 0777, 0, 0, 0, 0, 0);
            asAlice.putObject(b -> b.bucket("shared").key("mine"), RequestBody.fromString("alice"));
            assertThat(plinth.stat("/shared/mine").uid()).isEqualTo(4242);
            // a bucket is a directory in the root, which is root's; any key may make one (S3's rule), and owns it
            asAlice.createBucket(b -> b.bucket("alices"));
            assertThat(plinth.stat("/alices").uid()).isEqualTo(4242);
            // a deleted key stops working
            plinth.deleteAccessKey(alice.accessKeyId());
            cluster.clock().advance(Duration.ofMillis(AccessKeys.REFRESH_MILLIS + 1)); // the gateway's copy of the keys is stale now
            assertThatThrownBy(asAlice::listBuckets).satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidAccessKeyId"));
        }
    }

    /** A second gateway over the same cluster, with other settings. */
    private S3Gateway extraGateway(Map<String, String> settings) {
        dev.plinth.common.Config config = MiniCluster.testConfig();
        for (Map.Entry<String, String> setting : settings.entrySet()) {
            config = config.with(setting.getKey(), setting.getValue());
        }
        return S3Gateway.start(plinth, config, new dev.plinth.wire.HostPort("127.0.0.1", 0));
    }

    @Test
    void tlsWithAGivenCertificate() throws Exception {
        Path certificate = directory.resolve("cert.pem");
        Path key = directory.resolve("key.pem");
        dev.plinth.integration.TestProcesses.run(List.of("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key.toString(),
                "-out", certificate.toString(), "-days", "2", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"),
                Duration.ofMinutes(1));
        s3.createBucket(b -> b.bucket("tls"));
        java.security.KeyStore trusted = java.security.KeyStore.getInstance(java.security.KeyStore.getDefaultType());
        trusted.load(null, null);
        try (var in = java.nio.file.Files.newInputStream(certificate)) {
            trusted.setCertificateEntry("plinth", java.security.cert.CertificateFactory.getInstance("X.509").generateCertificate(in));
        }
        javax.net.ssl.TrustManagerFactory trust = javax.net.ssl.TrustManagerFactory.getInstance(javax.net.ssl.TrustManagerFactory.getDefaultAlgorithm());
        trust.init(trusted);
        S3Credentials.KeyPair owner = S3Testing.ownerKey(cluster);
        try (S3Gateway tls = extraGateway(Map.of("s3.tls-certificate-file", certificate.toString(), "s3.tls-key-file", key.toString()));
             S3Client overTls = S3Client.builder().endpointOverride(URI.create("https://" + tls.address())).region(Region.US_EAST_1)
                     .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(owner.accessKeyId(), owner.secretKey())))
                     .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                     .httpClient(software.amazon.awssdk.http.apache5.Apache5HttpClient.builder().tlsTrustManagersProvider(trust::getTrustManagers).build())
                     .build()) {
            assertThat(tls.tls()).isTrue();
            byte[] data = randomBytes(300_000);
            overTls.putObject(b -> b.bucket("tls").key("secret"), RequestBody.fromBytes(data));
            assertThat(overTls.getObjectAsBytes(b -> b.bucket("tls").key("secret")).asByteArray()).isEqualTo(data);
            // plain HTTP to the TLS port gets no S3 answer
            assertThat(S3Testing.raw("http://" + tls.address(), "GET /tls/secret HTTP/1.1\r\nHost: x", null).errorCode()).isNull();
        }
        assertThatThrownBy(() -> extraGateway(Map.of("s3.tls-certificate-file", "/nonexistent.pem", "s3.tls-key-file", key.toString())))
                .isInstanceOf(dev.plinth.common.PlinthException.class).hasMessageContaining("/nonexistent.pem");
    }

    @Test
    void virtualHostStyleAndAnonymousReadsWhereConfigured() throws IOException {
        s3.createBucket(b -> b.bucket("public-data").acl(software.amazon.awssdk.services.s3.model.BucketCannedACL.PUBLIC_READ));
        s3.putObject(b -> b.bucket("public-data").key("dir/readme.txt"), RequestBody.fromString("open to all"));
        try (S3Gateway gateway = extraGateway(Map.of("s3.domain", "s3.test", "s3.anonymous-uid", "65534"))) {
            String url = "http://" + gateway.address();
            String host = "Host: public-data.s3.test:" + gateway.address().port();
            // virtual-host style: the bucket is in the Host header, the key is the whole path
            S3Testing.Response vhost = S3Testing.raw(url, "GET /dir/readme.txt HTTP/1.1\r\n" + host, null);
            assertThat(vhost.status()).isEqualTo(200);
            assertThat(vhost.text()).isEqualTo("open to all");
            S3Testing.Response listing = S3Testing.raw(url, "GET /?list-type=2 HTTP/1.1\r\n" + host, null);
            assertThat(listing.text()).contains("<Key>dir/readme.txt</Key>");
            // anonymous callers act as uid 65534: they read what others may read, and write nothing of root's
            S3Testing.Response write = S3Testing.raw(url, "PUT /public-data/new HTTP/1.1\r\nHost: x\r\nContent-Length: 1", new byte[] {1});
            assertThat(write.errorCode()).isEqualTo("AccessDenied");
            // signed requests work on the same gateway, path style too
            String signed = S3Testing.signedHead(url, S3Testing.ownerKey(cluster), "GET", "/public-data/dir/readme.txt", Map.of(),
                    SigV4.UNSIGNED_PAYLOAD);
            assertThat(S3Testing.raw(url, signed, null).text()).isEqualTo("open to all");
        }
        // the main gateway has no anonymous access
        assertThat(S3Testing.raw(endpoint, "GET /public-data/dir/readme.txt HTTP/1.1\r\nHost: x", null).errorCode()).isEqualTo("AccessDenied");
    }

    /** PUT writes a hidden file and renames it into place: a reader sees all of the old object or all of the new one. */
    @Test
    void readersNeverSeeAHalfWrittenObject() throws Exception {
        s3.createBucket(b -> b.bucket("atomic"));
        int size = 4 << 20;
        byte[][] versions = new byte[2][size];
        java.util.Arrays.fill(versions[0], (byte) 'A');
        java.util.Arrays.fill(versions[1], (byte) 'B');
        s3.putObject(b -> b.bucket("atomic").key("obj"), RequestBody.fromBytes(versions[0]));
        AtomicBoolean writing = new AtomicBoolean(true);
        AtomicInteger reads = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(3);
        try {
            Future<?> writer = pool.submit(() -> {
                try {
                    for (int i = 1; i <= 12; i++) {
                        byte[] version = versions[i % 2];
                        s3.putObject(b -> b.bucket("atomic").key("obj"), RequestBody.fromBytes(version));
                    }
                } finally {
                    writing.set(false);
                }
                return null;
            });
            List<Future<?>> readers = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                readers.add(pool.submit(() -> {
                    while (writing.get()) {
                        ResponseBytes<GetObjectResponse> response = s3.getObjectAsBytes(b -> b.bucket("atomic").key("obj"));
                        byte[] got = response.asByteArray();
                        assertThat(got).hasSize(size);
                        byte first = got[0];
                        for (byte b : got) {
                            if (b != first) {
                                throw new AssertionError("a reader saw a mix of two versions");
                            }
                        }
                        // the answer's ETag is the one of the version it carries, not of the one it replaced
                        assertThat(response.response().eTag()).isEqualTo("\"" + md5Hex(got) + "\"");
                        reads.incrementAndGet();
                    }
                    return null;
                }));
            }
            writer.get();
            for (Future<?> reader : readers) {
                reader.get();
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(reads.get()).isPositive();
        // nothing hidden is left behind
        assertThat(plinth.list("/atomic")).extracting(e -> e.name()).containsExactly("obj");
    }

    /**
     * A client that pipelines (sends its next requests before the answers) gets its answers in
     * order, its uploads whole, and a connection that still serves; one that closes its side after
     * its last request still gets every answer, then the end of the stream.
     */
    @Test
    void pipelinedRequestsAreAnsweredInOrder() throws Exception {
        s3.createBucket(b -> b.bucket("pipelined"));
        S3Credentials.KeyPair owner = S3Testing.ownerKey(cluster);
        URI uri = URI.create(endpoint);
        for (int round = 0; round < 10; round++) { // the order of reads, answers and the client's close varies: ten tries of each
            boolean halfClose = round % 2 == 1;
            byte[] small = randomBytes(3_000);
            byte[] large = randomBytes(300_000); // past the Data-on-MDT part: its body takes several reads
            java.io.ByteArrayOutputStream sent = new java.io.ByteArrayOutputStream();
            for (byte[] request : List.of(rawRequest(owner, "PUT", "/pipelined/small", small), rawRequest(owner, "GET", "/pipelined/small", null),
                    rawRequest(owner, "PUT", "/pipelined/large", large), rawRequest(owner, "GET", "/pipelined/large", null),
                    rawRequest(owner, "GET", "/pipelined/missing", null))) {
                sent.write(request);
            }
            try (java.net.Socket socket = new java.net.Socket(uri.getHost(), uri.getPort())) {
                socket.setSoTimeout(30_000);
                // written on its own thread, as a pipelining client does: the gateway reads on only as it answers
                Future<?> writer = Executors.newVirtualThreadPerTaskExecutor().submit(() -> {
                    socket.getOutputStream().write(sent.toByteArray());
                    if (halfClose) {
                        socket.shutdownOutput();
                    }
                    return null;
                });
                java.io.InputStream in = new java.io.BufferedInputStream(socket.getInputStream());
                assertThat(S3Testing.readOne(in).status()).isEqualTo(200);
                assertThat(S3Testing.readOne(in).body()).isEqualTo(small);
                assertThat(S3Testing.readOne(in).status()).isEqualTo(200);
                assertThat(S3Testing.readOne(in).body()).isEqualTo(large);
                assertThat(S3Testing.readOne(in).errorCode()).isEqualTo("NoSuchKey");
                writer.get();
                if (halfClose) {
                    assertThat(in.read()).as("the end of the stream after the last answer").isEqualTo(-1);
                } else {
                    socket.getOutputStream().write(rawRequest(owner, "GET", "/pipelined/large", null));
                    assertThat(S3Testing.readOne(in).body()).as("the same connection, later").isEqualTo(large);
                }
            }
        }
    }

    private byte[] rawRequest(S3Credentials.KeyPair key, String method, String path, byte[] body) {
        Map<String, String> headers = Map.of("content-length", String.valueOf(body == null ? 0 : body.length));
        byte[] head = (S3Testing.signedHead(endpoint, key, method, path, headers, SigV4.UNSIGNED_PAYLOAD) + "\r\n\r\n")
                .getBytes(StandardCharsets.UTF_8);
        byte[] request = java.util.Arrays.copyOf(head, head.length + (body == null ? 0 : body.length));
        if (body != null) {
            System.arraycopy(body, 0, request, head.length, body.length);
        }
        return request;
    }

    @Test
    void filesMadeThroughTheNamespaceAreObjects() throws IOException {
        plinth.mkdirs("/native/deep/er", 0755);
        byte[] data = randomBytes(1 << 20);
        try (var file = plinth.create("/native/deep/er/file", 0644, true, null)) {
            file.write(0, java.nio.ByteBuffer.wrap(data));
        }
        HeadObjectResponse head = s3.headObject(b -> b.bucket("native").key("deep/er/file"));
        assertThat(head.contentLength()).isEqualTo(data.length);
        assertThat(head.eTag()).endsWith("-1\""); // not an MD5 of the data, and says so as a multipart ETag does
        assertThat(get("native", "deep/er/file")).isEqualTo(data);
        // a symlink is not an object
        plinth.symlink("/native/link", "/native/deep/er/file");
        assertThat(s3.listObjectsV2(b -> b.bucket("native")).contents()).extracting(S3Object::key).containsExactly("deep/er/file");
        // an object whose path crosses a file is a conflict, not a mystery
        assertThatThrownBy(() -> s3.putObject(b -> b.bucket("native").key("deep/er/file/child"), RequestBody.fromString("x")))
                .isInstanceOf(S3Exception.class).satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(409));
    }
}
