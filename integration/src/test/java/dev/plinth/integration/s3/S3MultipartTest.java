package dev.plinth.integration.s3;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.plinth.client.PlinthClient;
import dev.plinth.common.FaultPoints;
import dev.plinth.integration.MiniCluster;
import java.io.ByteArrayOutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.ServerSideEncryption;

/**
 * Multipart uploads whose parts are written in place: completing one of parts of one size moves
 * the upload's file to its key without reading or writing its bytes again, and every case that
 * cannot be placed (a replaced part, parts left out, a choice that is not 1..k, a claimed slot
 * whose writer never finishes, a completion that failed after sealing) still assembles exactly
 * the bytes the chosen parts hold.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class S3MultipartTest {
    private static final String BUCKET = "parts";
    private static final int PART = 5 << 20;

    @TempDir
    static Path directory;

    private MiniCluster cluster;
    private PlinthClient plinth;
    private S3Client s3;
    private final Random random = new Random(83);

    @BeforeAll
    void start() {
        cluster = MiniCluster.start(directory.resolve("data"));
        plinth = cluster.client();
        s3 = S3Testing.sdk(S3Testing.endpoint(cluster), S3Testing.ownerKey(cluster));
        s3.createBucket(b -> b.bucket(BUCKET));
    }

    @AfterEach
    void clearFaults() {
        FaultPoints.clear();
    }

    @AfterAll
    void stop() throws Exception {
        S3Testing.closeAll(s3, plinth, cluster);
    }

    private byte[] bytes(int length) {
        byte[] bytes = new byte[length];
        random.nextBytes(bytes);
        return bytes;
    }

    private String upload(String key, String uploadId, int number, byte[] part) {
        return s3.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(uploadId).partNumber(number), RequestBody.fromBytes(part)).eTag();
    }

    private static CompletedPart completed(int number, String etag) {
        return CompletedPart.builder().partNumber(number).eTag(etag).build();
    }

    private String complete(String key, String uploadId, CompletedPart... parts) {
        return s3.completeMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(uploadId).multipartUpload(m -> m.parts(parts))).eTag();
    }

    private static byte[] concat(byte[]... parts) {
        ByteArrayOutputStream whole = new ByteArrayOutputStream();
        for (byte[] part : parts) {
            whole.writeBytes(part);
        }
        return whole.toByteArray();
    }

    private byte[] get(String key) {
        return s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asByteArray();
    }

    private double targetBytes(String direction) {
        return cluster.metricSum("plinth_target_io_bytes_total{direction=\"" + direction + "\"");
    }

    @Test
    void partsOfOneSizeUploadedAtOnceCompleteWithoutTheirBytesMovingAgain() throws Exception {
        String key = "checkpoints/step-1/model.bin";
        String uploadId = s3.createMultipartUpload(b -> b.bucket(BUCKET).key(key)).uploadId();
        List<byte[]> parts = List.of(bytes(PART), bytes(PART), bytes(PART), bytes(2 << 20));
        List<CompletedPart> done = new ArrayList<>();
        // as an SDK sends them: all at once, in no fixed order
        try (ExecutorService pool = Executors.newFixedThreadPool(4)) {
            List<Future<String>> etags = new ArrayList<>();
            for (int i = parts.size() - 1; i >= 0; i--) {
                int number = i + 1;
                etags.add(pool.submit(() -> upload(key, uploadId, number, parts.get(number - 1))));
            }
            for (int i = 0; i < parts.size(); i++) {
                done.add(completed(parts.size() - i, etags.get(i).get()));
            }
        }
        done.sort(java.util.Comparator.comparing(CompletedPart::partNumber));
        assertThat(s3.listParts(b -> b.bucket(BUCKET).key(key).uploadId(uploadId)).parts()).extracting(p -> p.size())
                .containsExactly((long) PART, (long) PART, (long) PART, 2L << 20);

        double writtenBefore = targetBytes("write");
        double readBefore = targetBytes("read");
        String etag = complete(key, uploadId, done.toArray(CompletedPart[]::new));
        // the last part (smaller than any slot, so maybe a file of its own) may be copied into its slot: nothing more
        assertThat(targetBytes("write") - writtenBefore).as("bytes the targets wrote to complete the upload").isLessThanOrEqualTo(2 << 20);
        assertThat(targetBytes("read") - readBefore).as("bytes the targets read to complete the upload").isLessThanOrEqualTo(2 << 20);

        assertThat(etag).endsWith("-4\"");
        assertThat(get(key)).isEqualTo(concat(parts.toArray(byte[][]::new)));
        var second = s3.getObject(b -> b.bucket(BUCKET).key(key).partNumber(2));
        assertThat(second.readAllBytes()).isEqualTo(parts.get(1));
        assertThat(second.response().partsCount()).isEqualTo(4);
        // the upload is gone, and nothing of it is left behind the bucket
        assertThatThrownBy(() -> s3.listParts(b -> b.bucket(BUCKET).key(key).uploadId(uploadId)))
                .satisfies(e -> assertThat(((S3Exception) e).awsErrorDetails().errorCode()).isEqualTo("NoSuchUpload"));
        assertThat(plinth.exists("/" + ".plinth-s3-uploads/" + BUCKET + "/" + uploadId)).isFalse();
    }

    @Test
    void aReplacedPartAndAPartLeftOutAreAssembledFromWhereTheyAre() {
        String key = "replaced";
        String uploadId = s3.createMultipartUpload(b -> b.bucket(BUCKET).key(key)).uploadId();
        byte[] first = bytes(PART);
        byte[] second = bytes(PART);
        byte[] secondAgain = bytes(PART);
        byte[] third = bytes(PART);
        String etag1 = upload(key, uploadId, 1, first);
        upload(key, uploadId, 2, second);
        String etag3 = upload(key, uploadId, 3, third);
        upload(key, uploadId, 4, bytes(PART)); // uploaded, then left out
        String etag2 = upload(key, uploadId, 2, secondAgain); // its slot is taken: a file of its own, and the last upload wins
        complete(key, uploadId, completed(1, etag1), completed(2, etag2), completed(3, etag3));
        assertThat(get(key)).isEqualTo(concat(first, secondAgain, third));
    }

    @Test
    void partsLeftOutAtTheEndOrBetweenAreNotPartOfTheObject() {
        String tail = s3.createMultipartUpload(b -> b.bucket(BUCKET).key("tail")).uploadId();
        byte[] first = bytes(PART);
        byte[] second = bytes(PART);
        String etag1 = upload("tail", tail, 1, first);
        String etag2 = upload("tail", tail, 2, second);
        upload("tail", tail, 3, bytes(PART));
        complete("tail", tail, completed(1, etag1), completed(2, etag2));
        assertThat(get("tail")).isEqualTo(concat(first, second));

        String gap = s3.createMultipartUpload(b -> b.bucket(BUCKET).key("gap")).uploadId();
        String gapEtag1 = upload("gap", gap, 1, first);
        upload("gap", gap, 2, second);
        byte[] third = bytes(1 << 20);
        String gapEtag3 = upload("gap", gap, 3, third);
        complete("gap", gap, completed(1, gapEtag1), completed(3, gapEtag3));
        assertThat(get("gap")).isEqualTo(concat(first, third));
    }

    @Test
    void aSlotWhoseWriterNeverFinishesMakesCompletionCopy() throws Exception {
        FaultPoints.set(FaultPoints.S3_SLOT_FINISH_WAIT_MILLIS, "300");
        String key = "stuck";
        String uploadId = s3.createMultipartUpload(b -> b.bucket(BUCKET).key(key)).uploadId();
        byte[] first = bytes(PART);
        byte[] second = bytes(PART);
        String etag1 = upload(key, uploadId, 1, first);
        String etag2 = upload(key, uploadId, 2, second);
        // a writer that claimed slot 3 and died before it finished: it might still write, so the file cannot be moved
        plinth.create("/.plinth-s3-uploads/" + BUCKET + "/" + uploadId + "/slot-00003", 0600, true, null).close();
        double writtenBefore = targetBytes("write");
        complete(key, uploadId, completed(1, etag1), completed(2, etag2));
        // all but the first 64 KiB, which the MDT keeps (Data-on-MDT)
        assertThat(targetBytes("write") - writtenBefore).as("the parts were copied").isGreaterThanOrEqualTo(2.0 * PART - (64 << 10));
        assertThat(get(key)).isEqualTo(concat(first, second));
    }

    @Test
    void aCompletionThatFailedAfterSealingLeavesTheUploadWhole() {
        String key = "conditional";
        s3.putObject(b -> b.bucket(BUCKET).key(key), RequestBody.fromString("already here"));
        String uploadId = s3.createMultipartUpload(b -> b.bucket(BUCKET).key(key)).uploadId();
        byte[] first = bytes(PART);
        byte[] second = bytes(PART);
        byte[] third = bytes(PART);
        String etag1 = upload(key, uploadId, 1, first);
        String etag2 = upload(key, uploadId, 2, second);
        String etag3 = upload(key, uploadId, 3, third);
        assertThatThrownBy(() -> s3.completeMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(uploadId).ifNoneMatch("*")
                .multipartUpload(m -> m.parts(completed(1, etag1), completed(2, etag2)))))
                .satisfies(e -> assertThat(((S3Exception) e).statusCode()).isEqualTo(412));
        // sealed now: a part uploaded after that goes to a file of its own; nothing placed before is lost
        byte[] fourth = bytes(1 << 20);
        String etag4 = upload(key, uploadId, 4, fourth);
        complete(key, uploadId, completed(1, etag1), completed(2, etag2), completed(3, etag3), completed(4, etag4));
        assertThat(get(key)).isEqualTo(concat(first, second, third, fourth));
    }

    @Test
    void anEncryptedUploadIsPlacedAndReadsBackAcrossPartBoundaries() {
        String key = "sealed-secret";
        String uploadId = s3.createMultipartUpload(b -> b.bucket(BUCKET).key(key).serverSideEncryption(ServerSideEncryption.AES256)).uploadId();
        byte[] first = bytes(PART);
        byte[] second = bytes(3 << 20);
        String etag1 = s3.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(uploadId).partNumber(1), RequestBody.fromBytes(first)).eTag();
        String etag2 = s3.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(uploadId).partNumber(2), RequestBody.fromBytes(second)).eTag();
        double writtenBefore = targetBytes("write");
        complete(key, uploadId, completed(1, etag1), completed(2, etag2));
        assertThat(targetBytes("write") - writtenBefore).isZero();
        byte[] whole = concat(first, second);
        assertThat(get(key)).isEqualTo(whole);
        byte[] range = s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(key).range("bytes=" + (PART - 100) + "-" + (PART + 99))).asByteArray();
        assertThat(range).isEqualTo(java.util.Arrays.copyOfRange(whole, PART - 100, PART + 100));
    }
}
