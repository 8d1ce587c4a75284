package dev.plinth.gateway;

import dev.plinth.common.ErrorCode;

/**
 * The S3 error codes the gateway answers with, each with its HTTP status. Plinth's own
 * {@link ErrorCode}s are translated here, once ({@link #of(ErrorCode)}).
 */
enum S3Error {
    ACCESS_DENIED("AccessDenied", 403),
    BAD_DIGEST("BadDigest", 400),
    BUCKET_ALREADY_EXISTS("BucketAlreadyExists", 409),
    BUCKET_ALREADY_OWNED_BY_YOU("BucketAlreadyOwnedByYou", 409),
    BUCKET_NOT_EMPTY("BucketNotEmpty", 409),
    ENTITY_TOO_LARGE("EntityTooLarge", 400),
    ENTITY_TOO_SMALL("EntityTooSmall", 400),
    INCOMPLETE_BODY("IncompleteBody", 400),
    INTERNAL_ERROR("InternalError", 500),
    INVALID_ACCESS_KEY_ID("InvalidAccessKeyId", 403),
    INVALID_ARGUMENT("InvalidArgument", 400),
    INVALID_BUCKET_NAME("InvalidBucketName", 400),
    INVALID_DIGEST("InvalidDigest", 400),
    INVALID_LOCATION_CONSTRAINT("InvalidLocationConstraint", 400),
    INVALID_PART("InvalidPart", 400),
    INVALID_PART_ORDER("InvalidPartOrder", 400),
    INVALID_PART_NUMBER("InvalidPartNumber", 416),
    INVALID_RANGE("InvalidRange", 416),
    INVALID_STORAGE_CLASS("InvalidStorageClass", 400),
    INVALID_REQUEST("InvalidRequest", 400),
    INVALID_TAG("InvalidTag", 400),
    KEY_TOO_LONG("KeyTooLongError", 400),
    MALFORMED_XML("MalformedXML", 400),
    METADATA_TOO_LARGE("MetadataTooLarge", 400),
    METHOD_NOT_ALLOWED("MethodNotAllowed", 405),
    MISSING_CONTENT_LENGTH("MissingContentLength", 411),
    MISSING_SECURITY_HEADER("MissingSecurityHeader", 400),
    NO_SUCH_BUCKET("NoSuchBucket", 404),
    NO_SUCH_KEY("NoSuchKey", 404),
    NO_SUCH_TAG_SET("NoSuchTagSet", 404),
    NO_SUCH_UPLOAD("NoSuchUpload", 404),
    NOT_IMPLEMENTED("NotImplemented", 501),
    PRECONDITION_FAILED("PreconditionFailed", 412),
    REQUEST_HEADER_TOO_LARGE("RequestHeaderSectionTooLarge", 400),
    REQUEST_TIME_TOO_SKEWED("RequestTimeTooSkewed", 403),
    SERVICE_UNAVAILABLE("ServiceUnavailable", 503),
    SIGNATURE_DOES_NOT_MATCH("SignatureDoesNotMatch", 403),
    SLOW_DOWN("SlowDown", 503),
    CONTENT_SHA256_MISMATCH("XAmzContentSHA256Mismatch", 400),
    AUTHORIZATION_HEADER_MALFORMED("AuthorizationHeaderMalformed", 400),
    AUTHORIZATION_QUERY_MALFORMED("AuthorizationQueryParametersError", 400),
    /** Not S3's: a key whose path crosses an existing file, or an object where a directory is (the namespace is a tree). */
    OBJECT_PATH_CONFLICT("XPlinthObjectPathConflict", 409),
    NO_SPACE("XPlinthNoSpace", 507),
    /** The object was released to an archive and its archived copy cannot be read back (missing or damaged): see plinth hsm state. */
    ARCHIVE_UNREADABLE("XPlinthArchivedCopyUnreadable", 500);

    private final String code;
    private final int httpStatus;

    S3Error(String code, int httpStatus) {
        this.code = code;
        this.httpStatus = httpStatus;
    }

    String code() {
        return code;
    }

    int httpStatus() {
        return httpStatus;
    }

    /** The S3 error for a Plinth error met while serving a request (NOT_FOUND is mapped by the caller, who knows what is missing). */
    static S3Error of(ErrorCode code) {
        return switch (code) {
            case NOT_FOUND -> NO_SUCH_KEY;
            case PERMISSION_DENIED, OPERATION_NOT_PERMITTED, READ_ONLY, AUTHENTICATION_FAILED -> ACCESS_DENIED;
            case NOT_A_DIRECTORY, IS_A_DIRECTORY, ALREADY_EXISTS, DIRECTORY_NOT_EMPTY -> OBJECT_PATH_CONFLICT;
            case NAME_TOO_LONG -> KEY_TOO_LONG;
            case INVALID_ARGUMENT -> INVALID_ARGUMENT;
            case NO_SPACE -> NO_SPACE;
            case FILE_TOO_LARGE -> ENTITY_TOO_LARGE;
            case TIMED_OUT, UNAVAILABLE, NOT_LEADER, BUSY, INTERRUPTED, WOULD_BLOCK, NOT_READY, RESTORE_PENDING -> SERVICE_UNAVAILABLE;
            case NOT_SUPPORTED -> NOT_IMPLEMENTED;
            case CHANGED -> PRECONDITION_FAILED;
            case ARCHIVE_UNREADABLE -> ARCHIVE_UNREADABLE;
            default -> INTERNAL_ERROR;
        };
    }
}
