package dev.plinth.integration.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.gateway.S3Credentials;
import dev.plinth.client.PlinthClient;
import dev.plinth.integration.MiniCluster;
import dev.plinth.wire.messages.MetaMessages.Attributes;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import dev.plinth.wire.messages.MgmtMessages.CreateAccessKey;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.Bucket;
import software.amazon.awssdk.services.s3.model.BucketCannedACL;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.Grant;
import software.amazon.awssdk.services.s3.model.ObjectCannedACL;
import software.amazon.awssdk.services.s3.model.Permission;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Who may do what through S3: a bucket and what is put into it are private to the key that made
 * them (S3's rule, enforced by POSIX modes); canned ACLs as modes; any key may make a bucket;
 * multipart uploads are checked at their start and kept out of every bucket.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class S3AccessTest {
    private static final int ALICE = 4242;
    private static final int BOB = 4343;

    @TempDir
    static Path directory;

    private MiniCluster cluster;
    private PlinthClient plinth;
    private S3Client root;
    private S3Client alice;
    private S3Client bob;

    @BeforeAll
    void start() {
        cluster = MiniCluster.start(directory.resolve("data"));
        plinth = cluster.client();
        String endpoint = S3Testing.endpoint(cluster);
        root = S3Testing.sdk(endpoint, S3Testing.ownerKey(cluster));
        alice = S3Testing.sdk(endpoint, key(ALICE, "alice"));
        bob = S3Testing.sdk(endpoint, key(BOB, "bob"));
    }

    private S3Credentials.KeyPair key(int uid, String name) {
        AccessKey key = plinth.createAccessKey(new CreateAccessKey(null, null, uid, uid, List.of(), name));
        return new S3Credentials.KeyPair(key.accessKeyId(), key.secretKey());
    }

    @AfterAll
    void stop() throws Exception {
        S3Testing.closeAll(alice, bob, root, plinth, cluster);
    }

    private static String errorCode(Throwable e) {
        return ((S3Exception) e).awsErrorDetails().errorCode();
    }

    private static int status(Throwable e) {
        return ((S3Exception) e).statusCode();
    }

    private static List<String> bucketNames(S3Client client) {
        return client.listBuckets().buckets().stream().map(Bucket::name).toList();
    }

    @Test
    void bucketsAndObjectsArePrivateToTheirKeyByDefault() {
        alice.createBucket(b -> b.bucket("alices"));
        Attributes bucket = plinth.stat("/alices");
        assertThat(bucket.uid()).isEqualTo(ALICE);
        assertThat(bucket.mode() & 07777).isEqualTo(0700);
        alice.putObject(b -> b.bucket("alices").key("notes/today.txt"), RequestBody.fromString("private"));
        assertThat(plinth.stat("/alices/notes/today.txt").mode() & 07777).isEqualTo(0600);
        assertThat(plinth.stat("/alices/notes").mode() & 07777).isEqualTo(0700);
        assertThat(alice.getObjectAsBytes(b -> b.bucket("alices").key("notes/today.txt")).asUtf8String()).isEqualTo("private");

        assertThatThrownBy(() -> bob.getObjectAsBytes(b -> b.bucket("alices").key("notes/today.txt")))
                .satisfies(e -> assertThat(status(e)).isEqualTo(403));
        assertThatThrownBy(() -> bob.listObjectsV2(b -> b.bucket("alices"))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
        assertThatThrownBy(() -> bob.putObject(b -> b.bucket("alices").key("from-bob"), RequestBody.fromString("x")))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
        assertThat(bucketNames(alice)).contains("alices");
        assertThat(bucketNames(bob)).doesNotContain("alices");
        assertThat(bucketNames(root)).contains("alices"); // root reads every directory

        // root's objects are not readable by other keys either
        root.createBucket(b -> b.bucket("roots"));
        root.putObject(b -> b.bucket("roots").key("readme"), RequestBody.fromString("root's"));
        assertThatThrownBy(() -> alice.getObjectAsBytes(b -> b.bucket("roots").key("readme"))).satisfies(e -> assertThat(status(e)).isEqualTo(403));
    }

    @Test
    void cannedAclsAreModes() {
        bob.createBucket(b -> b.bucket("bobs-public").acl(BucketCannedACL.PUBLIC_READ));
        assertThat(plinth.stat("/bobs-public").mode() & 07777).isEqualTo(0755);
        // objects inherit what others may read from their bucket
        bob.putObject(b -> b.bucket("bobs-public").key("dir/shared"), RequestBody.fromString("shared"));
        assertThat(plinth.stat("/bobs-public/dir/shared").mode() & 07777).isEqualTo(0644);
        assertThat(plinth.stat("/bobs-public/dir").mode() & 07777).isEqualTo(0755);
        assertThat(alice.getObjectAsBytes(b -> b.bucket("bobs-public").key("dir/shared")).asUtf8String()).isEqualTo("shared");
        assertThat(bucketNames(alice)).contains("bobs-public");
        bob.putObject(b -> b.bucket("bobs-public").key("dir/mine").acl(ObjectCannedACL.PRIVATE), RequestBody.fromString("mine"));
        assertThat(plinth.stat("/bobs-public/dir/mine").mode() & 07777).isEqualTo(0600);
        assertThatThrownBy(() -> alice.getObjectAsBytes(b -> b.bucket("bobs-public").key("dir/mine"))).satisfies(e -> assertThat(status(e)).isEqualTo(403));

        List<Grant> grants = bob.getObjectAcl(b -> b.bucket("bobs-public").key("dir/shared")).grants();
        assertThat(grants).extracting(Grant::permissionAsString).containsExactly("FULL_CONTROL", "READ");
        assertThat(grants.get(1).grantee().uri()).isEqualTo("http://acs.amazonaws.com/groups/global/AllUsers");
        assertThat(bob.getObjectAcl(b -> b.bucket("bobs-public").key("dir/mine")).grants()).extracting(Grant::permission)
                .containsExactly(Permission.FULL_CONTROL);
        assertThat(bob.getBucketAcl(b -> b.bucket("bobs-public")).owner().id()).isEqualTo(String.valueOf(BOB));
        assertThatThrownBy(() -> alice.getObjectAcl(b -> b.bucket("bobs-public").key("dir/shared")))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));

        bob.putObjectAcl(b -> b.bucket("bobs-public").key("dir/mine").acl(ObjectCannedACL.PUBLIC_READ));
        assertThat(plinth.stat("/bobs-public/dir/mine").mode() & 07777).isEqualTo(0644);
        assertThat(alice.getObjectAsBytes(b -> b.bucket("bobs-public").key("dir/mine")).asUtf8String()).isEqualTo("mine");
        bob.putBucketAcl(b -> b.bucket("bobs-public").acl(BucketCannedACL.PRIVATE));
        assertThat(plinth.stat("/bobs-public").mode() & 07777).isEqualTo(0700);
        assertThatThrownBy(() -> alice.getObjectAsBytes(b -> b.bucket("bobs-public").key("dir/mine"))).satisfies(e -> assertThat(status(e)).isEqualTo(403));
        assertThatThrownBy(() -> alice.putObjectAcl(b -> b.bucket("bobs-public").key("dir/mine").acl(ObjectCannedACL.PRIVATE)))
                .satisfies(e -> assertThat(status(e)).isEqualTo(403));
        assertThatThrownBy(() -> bob.putObject(b -> b.bucket("bobs-public").key("x").acl(ObjectCannedACL.PUBLIC_READ_WRITE),
                RequestBody.fromString("x"))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("NotImplemented"));
    }

    @Test
    void anyKeyMakesABucketAndOnlyItsOwnerDeletesIt() {
        bob.createBucket(b -> b.bucket("bobs-own"));
        bob.createBucket(b -> b.bucket("bobs-own")); // us-east-1 answers a repeat of one's own bucket with 200
        assertThatThrownBy(() -> alice.createBucket(b -> b.bucket("bobs-own")))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("BucketAlreadyExists"));
        assertThatThrownBy(() -> alice.deleteBucket(b -> b.bucket("bobs-own"))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
        bob.createBucket(b -> b.bucket("bobs-located").createBucketConfiguration(c -> c.locationConstraint("eu-west-1")));
        assertThat(bob.getBucketLocation(b -> b.bucket("bobs-located")).locationConstraintAsString()).isEqualTo("eu-west-1");
        assertThat(bob.getBucketLocation(b -> b.bucket("bobs-own")).locationConstraintAsString()).isEmpty();
        bob.deleteBucket(b -> b.bucket("bobs-located"));
        bob.deleteBucket(b -> b.bucket("bobs-own"));
        assertThat(plinth.exists("/bobs-own")).isFalse();
    }

    @Test
    void listBucketsPages() {
        S3Client carol = S3Testing.sdk(S3Testing.endpoint(cluster), key(4545, "carol"));
        try (carol) {
            for (String name : List.of("carol-a", "carol-b", "carol-c", "other-d")) {
                carol.createBucket(b -> b.bucket(name));
            }
            var first = carol.listBuckets(b -> b.maxBuckets(2));
            assertThat(first.buckets()).extracting(Bucket::name).containsExactly("carol-a", "carol-b");
            assertThat(first.continuationToken()).isNotNull();
            var second = carol.listBuckets(b -> b.maxBuckets(2).continuationToken(first.continuationToken()));
            assertThat(second.buckets()).extracting(Bucket::name).containsExactly("carol-c", "other-d");
            assertThat(second.continuationToken()).isNull();
            assertThat(carol.listBuckets(b -> b.prefix("carol-")).buckets()).extracting(Bucket::name)
                    .containsExactly("carol-a", "carol-b", "carol-c");
            assertThatThrownBy(() -> carol.listBuckets(b -> b.maxBuckets(0))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidArgument"));
        }
    }

    @Test
    void multipartUploadsAreCheckedAtTheirStartAndHiddenFromBuckets() {
        alice.createBucket(b -> b.bucket("alices-uploads"));
        assertThatThrownBy(() -> bob.createMultipartUpload(b -> b.bucket("alices-uploads").key("big")))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
        String uploadId = alice.createMultipartUpload(b -> b.bucket("alices-uploads").key("big")).uploadId();
        // the upload lives outside the bucket: nothing shows in it through the mount, and other keys cannot add to it
        assertThat(plinth.list("/alices-uploads")).isEmpty();
        assertThatThrownBy(() -> bob.uploadPart(b -> b.bucket("alices-uploads").key("big").uploadId(uploadId).partNumber(1),
                RequestBody.fromString("bob's"))).satisfies(e -> assertThat(status(e)).isEqualTo(403));
        assertThatThrownBy(() -> bob.abortMultipartUpload(b -> b.bucket("alices-uploads").key("big").uploadId(uploadId)))
                .satisfies(e -> assertThat(status(e)).isEqualTo(403));
        String etag = alice.uploadPart(b -> b.bucket("alices-uploads").key("big").uploadId(uploadId).partNumber(1),
                RequestBody.fromString("alice's")).eTag();
        assertThat(alice.listMultipartUploads(b -> b.bucket("alices-uploads")).uploads()).hasSize(1);
        alice.completeMultipartUpload(b -> b.bucket("alices-uploads").key("big").uploadId(uploadId)
                .multipartUpload(m -> m.parts(CompletedPart.builder().partNumber(1).eTag(etag).build())));
        assertThat(plinth.stat("/alices-uploads/big").mode() & 07777).isEqualTo(0600);
        assertThat(plinth.stat("/alices-uploads/big").uid()).isEqualTo(ALICE);

        // a bucket that holds only unfinished uploads is empty: deleting it ends them
        alice.createMultipartUpload(b -> b.bucket("alices-uploads").key("never-finished"));
        alice.deleteObject(b -> b.bucket("alices-uploads").key("big"));
        alice.deleteBucket(b -> b.bucket("alices-uploads"));
        alice.createBucket(b -> b.bucket("alices-uploads"));
        assertThat(alice.listMultipartUploads(b -> b.bucket("alices-uploads")).uploads()).isEmpty();
    }
}
