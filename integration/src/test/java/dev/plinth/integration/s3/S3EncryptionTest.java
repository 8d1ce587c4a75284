package dev.plinth.integration.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.common.ErrorCode;
import dev.plinth.common.PlinthException;
import dev.plinth.integration.MiniCluster;
import dev.plinth.wire.messages.MetaMessages;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.ServerSideEncryption;

/**
 * S3 server-side encryption: SSE-S3 (the cluster's master key, readable by anyone the file's
 * modes let in, through S3 or the file system) and SSE-C (the client's key, never stored), with
 * ranges, multipart uploads and copies; the bytes at rest are not the plaintext; SSE-KMS is refused.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class S3EncryptionTest {
    private static final String BUCKET = "secrets";
    private static final byte[] MARKER = "plinth-plaintext-marker-0123456789".getBytes(StandardCharsets.US_ASCII);
    /** What a plain object holds, to show that the look for plaintext at rest finds it where it is. */
    private static final byte[] PLAIN_MARKER = "plinth-stored-as-it-is-9876543210".getBytes(StandardCharsets.US_ASCII);

    @TempDir
    static Path directory;

    private MiniCluster cluster;
    private PlinthClient plinth;
    private S3Client s3;
    private final Random random = new Random(11);

    @BeforeAll
    void start() {
        // SSE-C keys over plain HTTP: the test's gateway has no TLS (S3 itself would refuse them)
        cluster = MiniCluster.start(directory.resolve("data"), MiniCluster.testConfig().with("s3.sse-c-over-http", "true"));
        plinth = cluster.client();
        s3 = S3Testing.sdk(S3Testing.endpoint(cluster), S3Testing.ownerKey(cluster));
        s3.createBucket(b -> b.bucket(BUCKET));
    }

    @AfterAll
    void stop() throws Exception {
        S3Testing.closeAll(s3, plinth, cluster);
    }

    /** Random bytes with the marker every 64 KiB, so plaintext at rest can be looked for. */
    private byte[] body(int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        for (int at = 0; at + MARKER.length <= length; at += 64 << 10) {
            System.arraycopy(MARKER, 0, bytes, at, MARKER.length);
        }
        return bytes;
    }

    private byte[] customerKey() {
        byte[] key = new byte[32];
        random.nextBytes(key);
        return key;
    }

    private static String base64(byte[] bytes) {
        return Base64.getEncoder().encodeToString(bytes);
    }

    private static String md5(byte[] bytes) {
        try {
            return base64(MessageDigest.getInstance("MD5").digest(bytes));
        } catch (java.security.NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String errorCode(Throwable e) {
        return ((S3Exception) e).awsErrorDetails().errorCode();
    }

    private static int status(Throwable e) {
        return ((S3Exception) e).statusCode();
    }

    private static boolean contains(byte[] haystack, byte[] needle) {
        outer:
        for (int i = 0; i + needle.length <= haystack.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return true;
        }
        return false;
    }

    /** Whether any chunk file of the targets holds the marker of encrypted objects' plaintext. */
    private boolean plaintextAtRest() throws IOException {
        return atRest(MARKER);
    }

    private boolean atRest(byte[] marker) throws IOException {
        try (Stream<Path> files = Files.walk(directory.resolve("data"))) {
            for (Path file : files.filter(Files::isRegularFile).filter(f -> f.toString().contains("target")).toList()) {
                if (contains(Files.readAllBytes(file), marker)) {
                    return true;
                }
            }
        }
        return false;
    }

    private byte[] readThroughTheFileSystem(String key) {
        try (PlinthFile file = plinth.open("/" + BUCKET + "/" + key, false)) {
            ByteBuffer bytes = ByteBuffer.allocate((int) file.size());
            while (bytes.hasRemaining() && file.read(bytes.position(), bytes) > 0) {
                // read to the end
            }
            return bytes.array();
        }
    }

    @Test
    void sseS3ObjectsAreEncryptedAtRestAndReadByWhoeverMayReadThem() throws Exception {
        byte[] small = body(3000);
        byte[] large = body((3 << 20) + 5);
        for (byte[] body : List.of(small, large)) {
            String key = "s3/" + body.length;
            var put = s3.putObject(b -> b.bucket(BUCKET).key(key).serverSideEncryption(ServerSideEncryption.AES256), RequestBody.fromBytes(body));
            assertThat(put.serverSideEncryption()).isEqualTo(ServerSideEncryption.AES256);
            ResponseBytes<GetObjectResponse> got = s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(key));
            assertThat(got.asByteArray()).isEqualTo(body);
            assertThat(got.response().serverSideEncryption()).isEqualTo(ServerSideEncryption.AES256);
            assertThat(s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(key).range("bytes=1000-2999")).asByteArray())
                    .isEqualTo(java.util.Arrays.copyOfRange(body, 1000, 3000));
            assertThat(s3.headObject(b -> b.bucket(BUCKET).key(key)).serverSideEncryption()).isEqualTo(ServerSideEncryption.AES256);
            // the file system reads the plaintext too, and will not write in place
            assertThat(readThroughTheFileSystem(key)).isEqualTo(body);
            assertThat(plinth.stat("/" + BUCKET + "/" + key).encrypted()).isTrue();
            assertThatThrownBy(() -> plinth.open("/" + BUCKET + "/" + key, true))
                    .satisfies(e -> assertThat(((PlinthException) e).code()).isEqualTo(ErrorCode.OPERATION_NOT_PERMITTED));
        }
        assertThat(plaintextAtRest()).as("the targets hold ciphertext only").isFalse();
        // a plain object beside them is stored as it is (the check above can see plaintext)
        byte[] plain = new byte[100_000];
        System.arraycopy(PLAIN_MARKER, 0, plain, 80_000, PLAIN_MARKER.length); // past the Data-on-MDT part: on the targets
        s3.putObject(b -> b.bucket(BUCKET).key("plain"), RequestBody.fromBytes(plain));
        assertThat(atRest(PLAIN_MARKER)).isTrue();
    }

    @Test
    void sseCObjectsNeedTheirKey() throws Exception {
        byte[] key = customerKey();
        byte[] body = body((2 << 20) + 17);
        var put = s3.putObject(b -> b.bucket(BUCKET).key("c/object").sseCustomerAlgorithm("AES256").sseCustomerKey(base64(key))
                .sseCustomerKeyMD5(md5(key)), RequestBody.fromBytes(body));
        assertThat(put.sseCustomerKeyMD5()).isEqualTo(md5(key));
        assertThat(s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("c/object").sseCustomerAlgorithm("AES256").sseCustomerKey(base64(key))
                .sseCustomerKeyMD5(md5(key))).asByteArray()).isEqualTo(body);
        assertThat(s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("c/object").range("bytes=100-199").sseCustomerAlgorithm("AES256")
                .sseCustomerKey(base64(key)).sseCustomerKeyMD5(md5(key))).asByteArray()).isEqualTo(java.util.Arrays.copyOfRange(body, 100, 200));
        assertThatThrownBy(() -> s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("c/object")))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidRequest"));
        assertThatThrownBy(() -> s3.headObject(b -> b.bucket(BUCKET).key("c/object"))).satisfies(e -> assertThat(status(e)).isEqualTo(400));
        byte[] wrong = customerKey();
        assertThatThrownBy(() -> s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("c/object").sseCustomerAlgorithm("AES256")
                .sseCustomerKey(base64(wrong)).sseCustomerKeyMD5(md5(wrong)))).satisfies(e -> assertThat(status(e)).isEqualTo(403));
        assertThatThrownBy(() -> s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("c/object").sseCustomerAlgorithm("AES256")
                .sseCustomerKey(base64(key)).sseCustomerKeyMD5(md5(wrong)))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidArgument"));
        // the file system has no key: the file cannot be read there
        assertThatThrownBy(() -> readThroughTheFileSystem("c/object"))
                .satisfies(e -> assertThat(((PlinthException) e).code()).isEqualTo(ErrorCode.PERMISSION_DENIED));
        // a copy reads the source with its key and may encrypt the target otherwise
        s3.copyObject(b -> b.sourceBucket(BUCKET).sourceKey("c/object").destinationBucket(BUCKET).destinationKey("c/copied")
                .copySourceSSECustomerAlgorithm("AES256").copySourceSSECustomerKey(base64(key)).copySourceSSECustomerKeyMD5(md5(key))
                .serverSideEncryption(ServerSideEncryption.AES256));
        assertThat(s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("c/copied")).asByteArray()).isEqualTo(body);
        assertThatThrownBy(() -> s3.copyObject(b -> b.sourceBucket(BUCKET).sourceKey("c/object").destinationBucket(BUCKET)
                .destinationKey("c/no-key"))).satisfies(e -> assertThat(status(e)).isEqualTo(400));
        // a plain object read with a key is refused
        s3.putObject(b -> b.bucket(BUCKET).key("c/plain"), RequestBody.fromString("plain"));
        assertThatThrownBy(() -> s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("c/plain").sseCustomerAlgorithm("AES256")
                .sseCustomerKey(base64(key)).sseCustomerKeyMD5(md5(key)))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidRequest"));
        assertThat(plaintextAtRest()).isFalse();
    }

    @Test
    void multipartUploadsAreEncryptedPartByPart() throws Exception {
        byte[] key = customerKey();
        List<byte[]> parts = List.of(body(5 << 20), body(1000));
        byte[] whole = new byte[(5 << 20) + 1000];
        System.arraycopy(parts.get(0), 0, whole, 0, 5 << 20);
        System.arraycopy(parts.get(1), 0, whole, 5 << 20, 1000);
        for (boolean customer : new boolean[] {false, true}) {
            String objectKey = customer ? "mp/sse-c" : "mp/sse-s3";
            String upload = customer
                    ? s3.createMultipartUpload(b -> b.bucket(BUCKET).key(objectKey).sseCustomerAlgorithm("AES256").sseCustomerKey(base64(key))
                            .sseCustomerKeyMD5(md5(key))).uploadId()
                    : s3.createMultipartUpload(b -> b.bucket(BUCKET).key(objectKey).serverSideEncryption(ServerSideEncryption.AES256)).uploadId();
            if (customer) {
                assertThatThrownBy(() -> s3.uploadPart(b -> b.bucket(BUCKET).key(objectKey).uploadId(upload).partNumber(1),
                        RequestBody.fromBytes(parts.get(1)))).satisfies(e -> assertThat(status(e)).isEqualTo(400));
            }
            List<CompletedPart> completed = new ArrayList<>();
            for (int i = 0; i < parts.size(); i++) {
                int number = i + 1;
                String etag = customer
                        ? s3.uploadPart(b -> b.bucket(BUCKET).key(objectKey).uploadId(upload).partNumber(number).sseCustomerAlgorithm("AES256")
                                .sseCustomerKey(base64(key)).sseCustomerKeyMD5(md5(key)), RequestBody.fromBytes(parts.get(number - 1))).eTag()
                        : s3.uploadPart(b -> b.bucket(BUCKET).key(objectKey).uploadId(upload).partNumber(number),
                                RequestBody.fromBytes(parts.get(number - 1))).eTag();
                completed.add(CompletedPart.builder().partNumber(number).eTag(etag).build());
            }
            s3.completeMultipartUpload(b -> b.bucket(BUCKET).key(objectKey).uploadId(upload).multipartUpload(m -> m.parts(completed)));
            ResponseBytes<GetObjectResponse> got = customer
                    ? s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(objectKey).sseCustomerAlgorithm("AES256").sseCustomerKey(base64(key))
                            .sseCustomerKeyMD5(md5(key)))
                    : s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(objectKey));
            assertThat(got.asByteArray()).isEqualTo(whole);
            // a range across the parts' boundary decrypts with both parts' IVs
            String range = "bytes=" + ((5 << 20) - 10) + "-" + ((5 << 20) + 9);
            byte[] across = customer
                    ? s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(objectKey).range(range).sseCustomerAlgorithm("AES256")
                            .sseCustomerKey(base64(key)).sseCustomerKeyMD5(md5(key))).asByteArray()
                    : s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(objectKey).range(range)).asByteArray();
            assertThat(across).isEqualTo(java.util.Arrays.copyOfRange(whole, (5 << 20) - 10, (5 << 20) + 10));
        }
        assertThat(readThroughTheFileSystem("mp/sse-s3")).isEqualTo(whole);
        assertThat(plaintextAtRest()).isFalse();
    }

    @Test
    void kmsIsRefusedAndSseCNeedsTlsUnlessAllowed() throws Exception {
        assertThatThrownBy(() -> s3.putObject(b -> b.bucket(BUCKET).key("kms").serverSideEncryption(ServerSideEncryption.AWS_KMS),
                RequestBody.fromString("x"))).satisfies(e -> assertThat(status(e)).isEqualTo(501));
        assertThatThrownBy(() -> s3.headObject(b -> b.bucket(BUCKET).key("kms"))).isInstanceOf(S3Exception.class);
        byte[] key = customerKey();
        try (MiniCluster strict = MiniCluster.start(directory.resolve("strict"));
             S3Client strictS3 = S3Testing.sdk(S3Testing.endpoint(strict), S3Testing.ownerKey(strict))) {
            strictS3.createBucket(b -> b.bucket("strict"));
            assertThatThrownBy(() -> strictS3.putObject(b -> b.bucket("strict").key("c").sseCustomerAlgorithm("AES256").sseCustomerKey(base64(key))
                    .sseCustomerKeyMD5(md5(key)), RequestBody.fromString("x"))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidRequest"));
        }
    }

    @Test
    void theEncryptedFlagFollowsTheAttribute() {
        s3.putObject(b -> b.bucket(BUCKET).key("attr/object").serverSideEncryption(ServerSideEncryption.AES256),
                RequestBody.fromString("attribute"));
        long inode = plinth.stat("/" + BUCKET + "/attr/object").inodeId();
        assertThat(plinth.getXattr(inode, MetaMessages.SSE_XATTR)).isNotEmpty();
        assertThat(plinth.stat("/" + BUCKET + "/attr/object").encrypted()).isTrue();
        // its owner may take the attribute away: the file then reads as stored (ciphertext) and may be written again
        plinth.removeXattr(inode, MetaMessages.SSE_XATTR);
        assertThat(plinth.stat("/" + BUCKET + "/attr/object").encrypted()).isFalse();
        assertThat(readThroughTheFileSystem("attr/object")).isNotEqualTo("attribute".getBytes(StandardCharsets.US_ASCII));
        plinth.open("/" + BUCKET + "/attr/object", true).close();
    }
}
