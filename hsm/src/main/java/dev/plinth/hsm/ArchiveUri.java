package dev.plinth.hsm;

import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * Where an archive keeps its objects: {@code file:///DIR}, or
 * {@code s3://BUCKET/PREFIX?endpoint=URL&region=R&path-style=true&credentials=FILE&profile=P}
 * (every query parameter optional: without an endpoint, AWS; without credentials, the SDK's
 * default chain).
 */
public record ArchiveUri(String scheme, String directory, String bucket, String prefix, String endpoint, String region,
                         boolean pathStyle, String credentialsFile, String profile) {
    private static final Set<String> S3_PARAMETERS = Set.of("endpoint", "region", "path-style", "credentials", "profile");

    public static ArchiveUri parse(String text) {
        URI uri;
        try {
            uri = new URI(text);
        } catch (java.net.URISyntaxException e) {
            throw new IllegalArgumentException("not an archive URI: " + text + " (" + e.getReason() + ")");
        }
        if ("file".equals(uri.getScheme())) {
            if (uri.getPath() == null || !uri.getPath().startsWith("/") || uri.getQuery() != null) {
                throw new IllegalArgumentException("a directory archive is file:///ABSOLUTE/PATH, not " + text);
            }
            return new ArchiveUri("file", uri.getPath(), null, "", null, null, false, null, null);
        }
        if ("s3".equals(uri.getScheme())) {
            String bucket = uri.getHost();
            if (bucket == null || bucket.isEmpty()) {
                throw new IllegalArgumentException("an S3 archive is s3://BUCKET/PREFIX?endpoint=URL&region=R&path-style=true&credentials=FILE, not " + text);
            }
            String prefix = uri.getPath() == null ? "" : uri.getPath().replaceAll("^/+|/+$", "");
            Map<String, String> parameters = new HashMap<>();
            if (uri.getRawQuery() != null) {
                for (String pair : uri.getRawQuery().split("&")) {
                    int equals = pair.indexOf('=');
                    String name = equals < 0 ? pair : pair.substring(0, equals);
                    if (!S3_PARAMETERS.contains(name)) {
                        throw new IllegalArgumentException("unknown archive parameter '" + name + "' in " + text + "; known: " + S3_PARAMETERS);
                    }
                    parameters.put(name, equals < 0 ? "" : URLDecoder.decode(pair.substring(equals + 1), StandardCharsets.UTF_8));
                }
            }
            String pathStyle = parameters.getOrDefault("path-style", "false");
            if (!pathStyle.equals("true") && !pathStyle.equals("false")) {
                throw new IllegalArgumentException("path-style is true or false, not '" + pathStyle + "'");
            }
            return new ArchiveUri("s3", null, bucket, prefix, parameters.get("endpoint"), parameters.getOrDefault("region", "us-east-1"),
                    pathStyle.equals("true"), parameters.get("credentials"), parameters.getOrDefault("profile", "default"));
        }
        throw new IllegalArgumentException("an archive URI is file:///DIR or s3://BUCKET/PREFIX?..., not " + text);
    }

    /** Opens the store this URI names. */
    public ObjectStore open(long retryMillis) throws java.io.IOException {
        return scheme.equals("file") ? new DirectoryObjectStore(java.nio.file.Path.of(directory)) : new S3ObjectStore(this, retryMillis);
    }
}
