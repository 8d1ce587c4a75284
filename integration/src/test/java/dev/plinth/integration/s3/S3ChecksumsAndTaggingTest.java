package dev.plinth.integration.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.client.PlinthFile;
import dev.plinth.gateway.S3Credentials;
import dev.plinth.integration.MiniCluster;
import dev.plinth.wire.messages.MgmtMessages.AccessKey;
import dev.plinth.wire.messages.MgmtMessages.CreateAccessKey;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.Checksum;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.ChecksumAlgorithm;
import software.amazon.awssdk.services.s3.model.ChecksumMode;
import software.amazon.awssdk.services.s3.model.ChecksumType;
import software.amazon.awssdk.services.s3.model.CompleteMultipartUploadResponse;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.GetObjectAttributesResponse;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ObjectAttributes;
import software.amazon.awssdk.services.s3.model.ObjectPart;
import software.amazon.awssdk.services.s3.model.PutObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.Tag;
import software.amazon.awssdk.services.s3.model.TaggingDirective;
import software.amazon.awssdk.services.s3.model.UploadPartResponse;

/**
 * Flexible checksums (verified on PUT and UploadPart, stored, answered on GET and HEAD with
 * x-amz-checksum-mode, combined for multipart objects, in GetObjectAttributes) and object and
 * bucket tagging, through the AWS SDK for Java v2, which sends CRC32 checksums and validates
 * answered ones by default.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class S3ChecksumsAndTaggingTest {
    private static final String BUCKET = "sums";
    private static final int OTHER_UID = 4545;

    @TempDir
    static Path directory;

    private MiniCluster cluster;
    private PlinthClient plinth;
    private S3Client s3;
    private S3Client other;
    private final Random random = new Random(7);

    @BeforeAll
    void start() {
        cluster = MiniCluster.start(directory.resolve("data"));
        plinth = cluster.client();
        String endpoint = S3Testing.endpoint(cluster);
        s3 = S3Testing.sdk(endpoint, S3Testing.ownerKey(cluster));
        AccessKey key = plinth.createAccessKey(new CreateAccessKey(null, null, OTHER_UID, OTHER_UID, List.of(), "other"));
        other = S3Testing.sdk(endpoint, new S3Credentials.KeyPair(key.accessKeyId(), key.secretKey()));
        s3.createBucket(b -> b.bucket(BUCKET));
    }

    @AfterAll
    void stop() throws Exception {
        S3Testing.closeAll(other, s3, plinth, cluster);
    }

    private byte[] bytes(int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        return bytes;
    }

    private static String base64(Checksum checksum, byte[] bytes) {
        checksum.update(bytes, 0, bytes.length);
        return Base64.getEncoder().encodeToString(ByteBuffer.allocate(4).putInt((int) checksum.getValue()).array());
    }

    private static String sha256(byte[] bytes) throws Exception {
        return Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-256").digest(bytes));
    }

    private static String errorCode(Throwable e) {
        return ((S3Exception) e).awsErrorDetails().errorCode();
    }

    @Test
    void theSdksDefaultChecksumIsVerifiedStoredAndAnswered() {
        byte[] small = bytes(3000);
        byte[] large = bytes((3 << 20) + 17); // past the Data-on-MDT part: written through the targets
        for (byte[] body : List.of(small, large)) {
            String key = "default/" + body.length;
            PutObjectResponse put = s3.putObject(b -> b.bucket(BUCKET).key(key), RequestBody.fromBytes(body));
            assertThat(put.checksumCRC32()).isEqualTo(base64(new CRC32(), body));
            HeadObjectResponse head = s3.headObject(b -> b.bucket(BUCKET).key(key).checksumMode(ChecksumMode.ENABLED));
            assertThat(head.checksumCRC32()).isEqualTo(base64(new CRC32(), body));
            assertThat(head.checksumType()).isEqualTo(ChecksumType.FULL_OBJECT);
            // the SDK checks the answered checksum against the bytes it reads
            ResponseBytes<GetObjectResponse> got = s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(key).checksumMode(ChecksumMode.ENABLED));
            assertThat(got.asByteArray()).isEqualTo(body);
            assertThat(got.response().checksumCRC32()).isEqualTo(base64(new CRC32(), body));
            // a range is not the object: no checksum
            assertThat(s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(key).range("bytes=0-9").checksumMode(ChecksumMode.ENABLED))
                    .response().checksumCRC32()).isNull();
        }
    }

    @Test
    void everyAlgorithmIsKept() throws Exception {
        byte[] body = bytes(70_000);
        s3.putObject(b -> b.bucket(BUCKET).key("algorithms/sha256").checksumAlgorithm(ChecksumAlgorithm.SHA256), RequestBody.fromBytes(body));
        assertThat(s3.headObject(b -> b.bucket(BUCKET).key("algorithms/sha256").checksumMode(ChecksumMode.ENABLED)).checksumSHA256())
                .isEqualTo(sha256(body));
        s3.putObject(b -> b.bucket(BUCKET).key("algorithms/crc32c").checksumAlgorithm(ChecksumAlgorithm.CRC32_C), RequestBody.fromBytes(body));
        assertThat(s3.headObject(b -> b.bucket(BUCKET).key("algorithms/crc32c").checksumMode(ChecksumMode.ENABLED)).checksumCRC32C())
                .isEqualTo(base64(new CRC32C(), body));
        // the SDK computes CRC64NVME only with the CRT library, so the value is computed here and sent as given
        String nvme = crc64Nvme(body);
        s3.putObject(b -> b.bucket(BUCKET).key("algorithms/crc64nvme").checksumCRC64NVME(nvme), RequestBody.fromBytes(body));
        assertThat(s3.headObject(b -> b.bucket(BUCKET).key("algorithms/crc64nvme").checksumMode(ChecksumMode.ENABLED)).checksumCRC64NVME())
                .isEqualTo(nvme);
        assertThatThrownBy(() -> s3.putObject(b -> b.bucket(BUCKET).key("algorithms/crc64nvme").checksumCRC64NVME(crc64Nvme(bytes(3))),
                RequestBody.fromBytes(body))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("BadDigest"));
    }

    /** CRC-64/NVME bit by bit (reflected polynomial 0x9a6c9329ac4bc9b5, all ones in and out), written apart from the gateway's. */
    private static String crc64Nvme(byte[] bytes) {
        long crc = -1L;
        for (byte b : bytes) {
            crc ^= b & 0xff;
            for (int bit = 0; bit < 8; bit++) {
                crc = (crc & 1) != 0 ? (crc >>> 1) ^ 0x9a6c9329ac4bc9b5L : crc >>> 1;
            }
        }
        return Base64.getEncoder().encodeToString(ByteBuffer.allocate(8).putLong(~crc).array());
    }

    @Test
    void aWrongChecksumStoresNothing() {
        byte[] body = bytes(5000);
        String wrong = base64(new CRC32(), bytes(10));
        assertThatThrownBy(() -> s3.putObject(b -> b.bucket(BUCKET).key("wrong/object").checksumCRC32(wrong), RequestBody.fromBytes(body)))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("BadDigest"));
        assertThatThrownBy(() -> s3.headObject(b -> b.bucket(BUCKET).key("wrong/object"))).isInstanceOf(S3Exception.class);
    }

    @Test
    void anObjectChangedThroughTheFileSystemHasNoChecksum() {
        byte[] body = bytes(2000);
        s3.putObject(b -> b.bucket(BUCKET).key("changed/object"), RequestBody.fromBytes(body));
        try (PlinthFile file = plinth.open("/" + BUCKET + "/changed/object", true)) {
            file.write(0, ByteBuffer.wrap("changed".getBytes(StandardCharsets.US_ASCII)));
        }
        HeadObjectResponse head = s3.headObject(b -> b.bucket(BUCKET).key("changed/object").checksumMode(ChecksumMode.ENABLED));
        assertThat(head.checksumCRC32()).isNull();
        assertThat(s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("changed/object").checksumMode(ChecksumMode.ENABLED)).asByteArray())
                .startsWith("changed".getBytes(StandardCharsets.US_ASCII));
    }

    /** Uploads the parts with the upload's algorithm and completes with their checksums. */
    private CompleteMultipartUploadResponse multipart(String key, ChecksumAlgorithm algorithm, ChecksumType type, List<byte[]> parts,
                                                      List<String> partChecksums) {
        String upload = s3.createMultipartUpload(b -> b.bucket(BUCKET).key(key).checksumAlgorithm(algorithm).checksumType(type)).uploadId();
        List<CompletedPart> completed = new ArrayList<>();
        for (int i = 0; i < parts.size(); i++) {
            int number = i + 1;
            UploadPartResponse part = s3.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload).partNumber(number).checksumAlgorithm(algorithm),
                    RequestBody.fromBytes(parts.get(i)));
            String checksum = algorithm == ChecksumAlgorithm.CRC32 ? part.checksumCRC32() : part.checksumCRC32C();
            partChecksums.add(checksum);
            completed.add(algorithm == ChecksumAlgorithm.CRC32
                    ? CompletedPart.builder().partNumber(number).eTag(part.eTag()).checksumCRC32(checksum).build()
                    : CompletedPart.builder().partNumber(number).eTag(part.eTag()).checksumCRC32C(checksum).build());
        }
        return s3.completeMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(upload).multipartUpload(m -> m.parts(completed)));
    }

    @Test
    void compositeChecksumsOfMultipartObjects() {
        List<byte[]> parts = List.of(bytes(5 << 20), bytes(5 << 20), bytes(1234));
        List<String> partChecksums = new ArrayList<>();
        CompleteMultipartUploadResponse done = multipart("mp/composite", ChecksumAlgorithm.CRC32, ChecksumType.COMPOSITE, parts, partChecksums);
        CRC32 ofChecksums = new CRC32();
        for (int i = 0; i < parts.size(); i++) {
            assertThat(partChecksums.get(i)).isEqualTo(base64(new CRC32(), parts.get(i)));
            ofChecksums.update(Base64.getDecoder().decode(partChecksums.get(i)));
        }
        String expected = Base64.getEncoder().encodeToString(ByteBuffer.allocate(4).putInt((int) ofChecksums.getValue()).array()) + "-3";
        assertThat(done.checksumCRC32()).isEqualTo(expected);
        assertThat(done.checksumType()).isEqualTo(ChecksumType.COMPOSITE);
        assertThat(s3.headObject(b -> b.bucket(BUCKET).key("mp/composite").checksumMode(ChecksumMode.ENABLED)).checksumCRC32()).isEqualTo(expected);
        // a part's GET answers the part's own checksum, which the SDK checks
        ResponseBytes<GetObjectResponse> second = s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("mp/composite").partNumber(2)
                .checksumMode(ChecksumMode.ENABLED));
        assertThat(second.asByteArray()).isEqualTo(parts.get(1));
        assertThat(second.response().checksumCRC32()).isEqualTo(partChecksums.get(1));

        GetObjectAttributesResponse attributes = s3.getObjectAttributes(b -> b.bucket(BUCKET).key("mp/composite").maxParts(2)
                .objectAttributes(ObjectAttributes.E_TAG, ObjectAttributes.CHECKSUM, ObjectAttributes.OBJECT_PARTS, ObjectAttributes.OBJECT_SIZE,
                        ObjectAttributes.STORAGE_CLASS));
        assertThat(attributes.eTag()).isEqualTo(done.eTag().replace("\"", ""));
        assertThat(attributes.checksum().checksumCRC32()).isEqualTo(expected);
        assertThat(attributes.checksum().checksumType()).isEqualTo(ChecksumType.COMPOSITE);
        assertThat(attributes.objectSize()).isEqualTo((10L << 20) + 1234);
        assertThat(attributes.storageClassAsString()).isEqualTo("STANDARD");
        assertThat(attributes.objectParts().totalPartsCount()).isEqualTo(3);
        assertThat(attributes.objectParts().isTruncated()).isTrue();
        assertThat(attributes.objectParts().parts()).extracting(ObjectPart::partNumber).containsExactly(1, 2);
        assertThat(attributes.objectParts().parts()).extracting(ObjectPart::checksumCRC32).containsExactly(partChecksums.get(0), partChecksums.get(1));
        GetObjectAttributesResponse rest = s3.getObjectAttributes(b -> b.bucket(BUCKET).key("mp/composite").partNumberMarker(2)
                .objectAttributes(ObjectAttributes.OBJECT_PARTS));
        assertThat(rest.objectParts().parts()).extracting(ObjectPart::size).containsExactly(1234L);
        assertThat(rest.checksum()).isNull();
    }

    @Test
    void fullObjectChecksumsOfMultipartObjectsAreTheWholesCrc() {
        List<byte[]> parts = List.of(bytes(5 << 20), bytes(777));
        CompleteMultipartUploadResponse done = multipart("mp/full", ChecksumAlgorithm.CRC32_C, ChecksumType.FULL_OBJECT, parts, new ArrayList<>());
        CRC32C whole = new CRC32C();
        parts.forEach(whole::update);
        String expected = Base64.getEncoder().encodeToString(ByteBuffer.allocate(4).putInt((int) whole.getValue()).array());
        assertThat(done.checksumCRC32C()).isEqualTo(expected);
        assertThat(done.checksumType()).isEqualTo(ChecksumType.FULL_OBJECT);
        ResponseBytes<GetObjectResponse> got = s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("mp/full").checksumMode(ChecksumMode.ENABLED));
        assertThat(got.response().checksumCRC32C()).isEqualTo(expected);
    }

    @Test
    void multipartChecksumsAreChecked() {
        assertThatThrownBy(() -> s3.createMultipartUpload(b -> b.bucket(BUCKET).key("mp/bad").checksumAlgorithm(ChecksumAlgorithm.SHA256)
                .checksumType(ChecksumType.FULL_OBJECT))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidRequest"));
        String upload = s3.createMultipartUpload(b -> b.bucket(BUCKET).key("mp/bad").checksumAlgorithm(ChecksumAlgorithm.CRC32)).uploadId();
        // a part with another algorithm than the upload's is refused
        assertThatThrownBy(() -> s3.uploadPart(b -> b.bucket(BUCKET).key("mp/bad").uploadId(upload).partNumber(1)
                .checksumAlgorithm(ChecksumAlgorithm.SHA256), RequestBody.fromBytes(bytes(100))))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidRequest"));
        UploadPartResponse part = s3.uploadPart(b -> b.bucket(BUCKET).key("mp/bad").uploadId(upload).partNumber(1)
                .checksumAlgorithm(ChecksumAlgorithm.CRC32), RequestBody.fromBytes(bytes(100)));
        String wrong = base64(new CRC32(), bytes(5));
        assertThatThrownBy(() -> s3.completeMultipartUpload(b -> b.bucket(BUCKET).key("mp/bad").uploadId(upload).multipartUpload(m -> m.parts(
                CompletedPart.builder().partNumber(1).eTag(part.eTag()).checksumCRC32(wrong).build()))))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidPart"));
        assertThat(s3.listParts(b -> b.bucket(BUCKET).key("mp/bad").uploadId(upload)).parts().getFirst().checksumCRC32())
                .isEqualTo(part.checksumCRC32());
        s3.abortMultipartUpload(b -> b.bucket(BUCKET).key("mp/bad").uploadId(upload));
    }

    @Test
    void objectTagsFromPutTaggingCallsCopiesAndUploads() {
        s3.putObject(b -> b.bucket(BUCKET).key("tags/object").tagging("project=plinth&stage=raw data"), RequestBody.fromString("x"));
        assertThat(s3.getObjectTagging(b -> b.bucket(BUCKET).key("tags/object")).tagSet())
                .containsExactly(Tag.builder().key("project").value("plinth").build(), Tag.builder().key("stage").value("raw data").build());
        // kept as an extended attribute, readable through the file system
        assertThat(new String(plinth.getXattr(plinth.stat("/" + BUCKET + "/tags/object").inodeId(), "user.plinth.s3.tags"), StandardCharsets.UTF_8))
                .isEqualTo("project=plinth&stage=raw%20data");

        s3.putObjectTagging(b -> b.bucket(BUCKET).key("tags/object").tagging(t -> t.tagSet(Tag.builder().key("k").value("v").build())));
        assertThat(s3.getObjectTagging(b -> b.bucket(BUCKET).key("tags/object")).tagSet()).extracting(Tag::key).containsExactly("k");
        s3.copyObject(b -> b.sourceBucket(BUCKET).sourceKey("tags/object").destinationBucket(BUCKET).destinationKey("tags/copied"));
        assertThat(s3.getObjectTagging(b -> b.bucket(BUCKET).key("tags/copied")).tagSet()).extracting(Tag::key).containsExactly("k");
        s3.copyObject(b -> b.sourceBucket(BUCKET).sourceKey("tags/object").destinationBucket(BUCKET).destinationKey("tags/replaced")
                .taggingDirective(TaggingDirective.REPLACE).tagging("new=1"));
        assertThat(s3.getObjectTagging(b -> b.bucket(BUCKET).key("tags/replaced")).tagSet()).extracting(Tag::key).containsExactly("new");
        s3.deleteObjectTagging(b -> b.bucket(BUCKET).key("tags/object"));
        assertThat(s3.getObjectTagging(b -> b.bucket(BUCKET).key("tags/object")).tagSet()).isEmpty();

        String upload = s3.createMultipartUpload(b -> b.bucket(BUCKET).key("tags/uploaded").tagging("from=upload")).uploadId();
        String etag = s3.uploadPart(b -> b.bucket(BUCKET).key("tags/uploaded").uploadId(upload).partNumber(1), RequestBody.fromString("p")).eTag();
        s3.completeMultipartUpload(b -> b.bucket(BUCKET).key("tags/uploaded").uploadId(upload)
                .multipartUpload(m -> m.parts(CompletedPart.builder().partNumber(1).eTag(etag).build())));
        assertThat(s3.getObjectTagging(b -> b.bucket(BUCKET).key("tags/uploaded")).tagSet()).extracting(Tag::value).containsExactly("upload");

        // S3's limits, and an object's tags are as private as its bytes
        List<Tag> eleven = new ArrayList<>();
        for (int i = 0; i < 11; i++) {
            eleven.add(Tag.builder().key("k" + i).value("v").build());
        }
        assertThatThrownBy(() -> s3.putObjectTagging(b -> b.bucket(BUCKET).key("tags/object").tagging(t -> t.tagSet(eleven))))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("InvalidTag"));
        assertThatThrownBy(() -> other.getObjectTagging(b -> b.bucket(BUCKET).key("tags/copied")))
                .satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
        assertThatThrownBy(() -> other.putObjectTagging(b -> b.bucket(BUCKET).key("tags/copied")
                .tagging(t -> t.tagSet(Tag.builder().key("x").value("y").build())))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
    }

    @Test
    void bucketTags() {
        s3.createBucket(b -> b.bucket("tagged"));
        assertThatThrownBy(() -> s3.getBucketTagging(b -> b.bucket("tagged"))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("NoSuchTagSet"));
        s3.putBucketTagging(b -> b.bucket("tagged").tagging(t -> t.tagSet(Tag.builder().key("team").value("ml").build())));
        assertThat(s3.getBucketTagging(b -> b.bucket("tagged")).tagSet()).extracting(Tag::value).containsExactly("ml");
        assertThatThrownBy(() -> other.getBucketTagging(b -> b.bucket("tagged"))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("AccessDenied"));
        s3.deleteBucketTagging(b -> b.bucket("tagged"));
        assertThatThrownBy(() -> s3.getBucketTagging(b -> b.bucket("tagged"))).satisfies(e -> assertThat(errorCode(e)).isEqualTo("NoSuchTagSet"));
    }
}
