package dev.plinth.hsm;

import java.io.IOException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.function.LongConsumer;
import software.amazon.awssdk.auth.credentials.AwsCredentialsProvider;
import software.amazon.awssdk.auth.credentials.DefaultCredentialsProvider;
import software.amazon.awssdk.auth.credentials.ProfileCredentialsProvider;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.exception.SdkClientException;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.profiles.ProfileFile;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.ChecksumAlgorithm;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * An archive in an S3 bucket, through the AWS SDK: any S3-compatible server (Ceph RGW, MinIO,
 * AWS, another Plinth's gateway). Objects go up as multipart uploads, each part with its CRC32C
 * for the server to check, and become visible only when the upload completes; a failed put aborts
 * its upload. A server that cannot be reached is retried with backoff for {@code retryMillis},
 * then the call fails with an error that names the endpoint.
 */
public final class S3ObjectStore implements ObjectStore {
    private static final int MULTIPART_PART_BYTES_MIN = 5 << 20;
    private static final int MULTIPART_PARTS_MAX = 10_000;
    private final S3Client s3;
    private final ArchiveUri uri;
    private final long retryMillis;

    public S3ObjectStore(ArchiveUri uri, long retryMillis) {
        this.uri = uri;
        this.retryMillis = retryMillis;
        AwsCredentialsProvider credentials = uri.credentialsFile() == null ? DefaultCredentialsProvider.builder().build()
                : ProfileCredentialsProvider.builder().profileFile(ProfileFile.builder().content(Path.of(uri.credentialsFile()))
                .type(ProfileFile.Type.CREDENTIALS).build()).profileName(uri.profile()).build();
        var builder = S3Client.builder().credentialsProvider(credentials).region(Region.of(uri.region()))
                .forcePathStyle(uri.pathStyle())
                .httpClientBuilder(Apache5HttpClient.builder().maxConnections(32).connectionTimeout(Duration.ofSeconds(5)))
                .overrideConfiguration(o -> o.apiCallAttemptTimeout(Duration.ofMinutes(2)));
        if (uri.endpoint() != null) {
            builder.endpointOverride(URI.create(uri.endpoint()));
        }
        this.s3 = builder.build();
    }

    private String objectKey(String key) {
        return uri.prefix().isEmpty() ? key : uri.prefix() + "/" + key;
    }

    @Override
    public Put put(String key, Source source, long sizeBytes, int requestedPartBytes, int parallelism, LongConsumer progress)
            throws IOException {
        String objectKey = objectKey(key);
        // S3's bounds: parts of at least 5 MiB but the last, at most 10,000 of them
        int partBytes = (int) Math.min(Integer.MAX_VALUE - 8, Math.max(Math.max(requestedPartBytes, MULTIPART_PART_BYTES_MIN),
                (sizeBytes + MULTIPART_PARTS_MAX - 1) / MULTIPART_PARTS_MAX));
        if (sizeBytes <= partBytes) { // one request: no upload to leave behind
            ByteBuffer bytes = sizeBytes == 0 ? ByteBuffer.allocate(0) : source.read(0, (int) sizeBytes);
            int crc = Parts.crc32c(bytes);
            retrying("put " + objectKey, () -> s3.putObject(b -> b.bucket(uri.bucket()).key(objectKey).checksumCRC32C(base64(crc)),
                    RequestBody.fromByteBuffer(bytes.duplicate())));
            progress.accept(sizeBytes);
            return new Put(head(key), partBytes, sizeBytes == 0 ? List.of() : List.of(crc));
        }
        String uploadId = retrying("start an upload of " + objectKey, () -> s3.createMultipartUpload(b -> b.bucket(uri.bucket())
                .key(objectKey).checksumAlgorithm(ChecksumAlgorithm.CRC32_C)).uploadId());
        try (ExecutorService workers = Executors.newFixedThreadPool(Math.max(1, parallelism), Thread.ofVirtual().name("archive-part-", 0).factory())) {
            int count = Parts.count(sizeBytes, partBytes);
            int[] crcs = new int[count];
            CompletedPart[] completed = new CompletedPart[count];
            Semaphore window = new Semaphore(Math.max(1, parallelism));
            List<Future<Void>> pending = new ArrayList<>();
            for (int part = 0; part < count; part++) {
                long offset = (long) part * partBytes;
                int length = (int) Math.min(partBytes, sizeBytes - offset);
                int index = part;
                window.acquireUninterruptibly();
                pending.add(workers.submit(() -> {
                    try {
                        ByteBuffer bytes = source.read(offset, length);
                        crcs[index] = Parts.crc32c(bytes);
                        String checksum = base64(crcs[index]);
                        String etag = retrying("upload part " + (index + 1) + " of " + objectKey, () -> s3.uploadPart(b -> b
                                .bucket(uri.bucket()).key(objectKey).uploadId(uploadId).partNumber(index + 1).checksumCRC32C(checksum),
                                RequestBody.fromByteBuffer(bytes.duplicate())).eTag());
                        completed[index] = CompletedPart.builder().partNumber(index + 1).eTag(etag).checksumCRC32C(checksum).build();
                        progress.accept(length);
                        return null;
                    } finally {
                        window.release();
                    }
                }));
            }
            Parts.awaitAll(pending);
            retrying("complete the upload of " + objectKey, () -> s3.completeMultipartUpload(b -> b.bucket(uri.bucket()).key(objectKey)
                    .uploadId(uploadId).multipartUpload(m -> m.parts(completed))));
            return new Put(head(key), partBytes, java.util.Arrays.stream(crcs).boxed().toList());
        } catch (IOException | RuntimeException e) {
            try {
                s3.abortMultipartUpload(b -> b.bucket(uri.bucket()).key(objectKey).uploadId(uploadId));
            } catch (RuntimeException abort) {
                e.addSuppressed(abort); // the server's lifecycle rules, or the next archive of the file, clean it up
            }
            throw e;
        }
    }

    @Override
    public ByteBuffer read(String key, long offset, int length) throws IOException {
        if (length == 0) {
            return ByteBuffer.allocate(0);
        }
        String objectKey = objectKey(key);
        try {
            ResponseBytes<GetObjectResponse> bytes = retrying("read " + objectKey, () -> s3.getObjectAsBytes(b -> b.bucket(uri.bucket())
                    .key(objectKey).range("bytes=" + offset + "-" + (offset + length - 1))));
            return bytes.asByteBuffer();
        } catch (NoSuchKeyException e) {
            throw new ObjectMissingException("no object " + objectKey + " in " + describe());
        } catch (S3Exception e) {
            if (e.statusCode() == 416) { // past the end: the object is shorter than recorded
                return ByteBuffer.allocate(0);
            }
            throw new IOException("reading " + objectKey + " from " + describe() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public Stored head(String key) throws IOException {
        String objectKey = objectKey(key);
        try {
            HeadObjectResponse head = retrying("head " + objectKey, () -> s3.headObject(b -> b.bucket(uri.bucket()).key(objectKey)));
            return new Stored(key, head.contentLength(), head.versionId() != null ? head.versionId() : head.eTag());
        } catch (NoSuchKeyException e) {
            return null;
        } catch (S3Exception e) {
            if (e.statusCode() == 404) {
                return null;
            }
            throw new IOException("head " + objectKey + " in " + describe() + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void delete(String key) throws IOException {
        String objectKey = objectKey(key);
        retrying("delete " + objectKey, () -> s3.deleteObject(b -> b.bucket(uri.bucket()).key(objectKey)));
    }

    @Override
    public String describe() {
        return "s3://" + uri.bucket() + (uri.prefix().isEmpty() ? "" : "/" + uri.prefix()) + (uri.endpoint() == null ? "" : " at " + uri.endpoint());
    }

    @Override
    public void close() {
        s3.close();
    }

    /**
     * Runs a call, retrying while the server cannot be reached (connection refused or reset, a
     * 5xx) with backoff from 100 ms to 5 s, for {@code retryMillis} in all.
     */
    private <T> T retrying(String what, java.util.function.Supplier<T> call) throws IOException {
        long deadline = System.nanoTime() + retryMillis * 1_000_000;
        long backoff = 100;
        while (true) {
            try {
                return call.get();
            } catch (SdkClientException | S3Exception e) {
                boolean transient_ = e instanceof SdkClientException || ((S3Exception) e).statusCode() >= 500;
                if (!transient_) {
                    throw e;
                }
                if (System.nanoTime() + backoff * 1_000_000 > deadline) {
                    throw new IOException("cannot " + what + " in " + describe() + " (retried for " + retryMillis + " ms): " + e.getMessage(), e);
                }
                try {
                    Thread.sleep(backoff);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    throw new java.io.InterruptedIOException("interrupted while retrying to " + what);
                }
                backoff = Math.min(5000, backoff * 2);
            }
        }
    }

    private static String base64(int crc) {
        return Base64.getEncoder().encodeToString(ByteBuffer.allocate(4).putInt(crc).array());
    }
}
