"""Every implemented S3 operation over the errors AWS documents for it, through boto3.

Usage: /usr/bin/python3 error_sweep.py ENDPOINT OWNER_KEY OWNER_SECRET OTHER_KEY OTHER_SECRET BUCKET
OWNER and OTHER are keys of two different uids; BUCKET is made here. Each operation runs against
a missing bucket, a missing key, a missing upload, another key's private bucket, an unknown access
key and a wrong secret; then each operation's own documented errors. Prints every case whose
answer differs from AWS's (error code and HTTP status) and exits non-zero if any does.
"""
import base64
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, owner_key, owner_secret, other_key, other_secret, bucket = sys.argv[1:7]


def client(key, secret):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4", retries={"max_attempts": 1}))


owner = client(owner_key, owner_secret)


def with_query(operation, parameters):
    """A client whose calls of one operation carry query parameters boto3 would not send as given."""
    extra = client(owner_key, owner_secret)

    def add(request, **kwargs):
        separator = "&" if "?" in request.url else "?"
        request.url += separator + "&".join("%s=%s" % item for item in parameters.items())

    extra.meta.events.register("before-sign.s3." + "".join(part.capitalize() for part in operation.split("_")), add)
    return extra
CALLERS = {
    "owner": owner,
    "other key": client(other_key, other_secret),
    "unknown key": client("AKIAUNKNOWNUNKNOWN00", "x" * 40),
    "wrong secret": client(owner_key, "y" * 40),
}


def answer(call):
    """(error code, HTTP status) of a call, or ("ok", status)."""
    try:
        response = call()
        status = response["ResponseMetadata"]["HTTPStatusCode"] if isinstance(response, dict) else 200
        errors = response.get("Errors") if isinstance(response, dict) else None
        if errors:  # DeleteObjects answers per-key errors in a 200
            return errors[0]["Code"], status
        return "ok", status
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]


def operations(s3, b, key, upload):
    """Every implemented operation as a call on bucket b, key and upload id."""
    return {
        "HeadBucket": lambda: s3.head_bucket(Bucket=b),
        "DeleteBucket": lambda: s3.delete_bucket(Bucket=b),
        "GetBucketLocation": lambda: s3.get_bucket_location(Bucket=b),
        "GetBucketVersioning": lambda: s3.get_bucket_versioning(Bucket=b),
        "ListObjects": lambda: s3.list_objects(Bucket=b),
        "ListObjectsV2": lambda: s3.list_objects_v2(Bucket=b),
        "GetBucketAcl": lambda: s3.get_bucket_acl(Bucket=b),
        "PutBucketAcl": lambda: s3.put_bucket_acl(Bucket=b, ACL="private"),
        "GetBucketTagging": lambda: s3.get_bucket_tagging(Bucket=b),
        "PutBucketTagging": lambda: s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]}),
        "DeleteBucketTagging": lambda: s3.delete_bucket_tagging(Bucket=b),
        "ListMultipartUploads": lambda: s3.list_multipart_uploads(Bucket=b),
        "CreateMultipartUpload": lambda: s3.create_multipart_upload(Bucket=b, Key=key + "-upload"),
        "DeleteObjects": lambda: s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": key}]}),
        "PutObject": lambda: s3.put_object(Bucket=b, Key=key + "-put", Body=b"sweep"),
        "GetObject": lambda: s3.get_object(Bucket=b, Key=key),
        "HeadObject": lambda: s3.head_object(Bucket=b, Key=key),
        "DeleteObject": lambda: s3.delete_object(Bucket=b, Key=key),
        "CopyObject": lambda: s3.copy_object(Bucket=b, Key=key + "-copy", CopySource={"Bucket": b, "Key": key}),
        "GetObjectAcl": lambda: s3.get_object_acl(Bucket=b, Key=key),
        "PutObjectAcl": lambda: s3.put_object_acl(Bucket=b, Key=key, ACL="private"),
        "GetObjectTagging": lambda: s3.get_object_tagging(Bucket=b, Key=key),
        "PutObjectTagging": lambda: s3.put_object_tagging(Bucket=b, Key=key, Tagging={"TagSet": [{"Key": "k", "Value": "v"}]}),
        "DeleteObjectTagging": lambda: s3.delete_object_tagging(Bucket=b, Key=key),
        "GetObjectAttributes": lambda: s3.get_object_attributes(Bucket=b, Key=key, ObjectAttributes=["ETag", "ObjectSize"]),
        "UploadPart": lambda: s3.upload_part(Bucket=b, Key=key, UploadId=upload, PartNumber=1, Body=b"part"),
        "UploadPartCopy": lambda: s3.upload_part_copy(Bucket=b, Key=key, UploadId=upload, PartNumber=1,
                                                      CopySource={"Bucket": b, "Key": key}),
        "ListParts": lambda: s3.list_parts(Bucket=b, Key=key, UploadId=upload),
        "AbortMultipartUpload": lambda: s3.abort_multipart_upload(Bucket=b, Key=key, UploadId=upload),
        "CompleteMultipartUpload": lambda: s3.complete_multipart_upload(
            Bucket=b, Key=key, UploadId=upload, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"00"'}]}),
    }


NO_BUCKET = ("NoSuchBucket", 404)
NO_KEY = ("NoSuchKey", 404)
NO_UPLOAD = ("NoSuchUpload", 404)
DENIED = ("AccessDenied", 403)
OK = ("ok", 200)
# HEAD answers carry no body, so boto3 reports the status as the code
HEAD_NOT_FOUND = ("404", 404)
HEAD_FORBIDDEN = ("403", 403)
OBJECT_OPS = ("GetObject", "HeadObject", "CopyObject", "GetObjectAcl", "PutObjectAcl", "GetObjectTagging", "PutObjectTagging",
              "DeleteObjectTagging", "GetObjectAttributes")
UPLOAD_OPS = ("UploadPart", "UploadPartCopy", "ListParts", "AbortMultipartUpload", "CompleteMultipartUpload")


def expected_missing_bucket(op):
    return HEAD_NOT_FOUND if op.startswith("Head") else NO_BUCKET


def expected_missing_key(op):
    if op == "HeadObject":
        return HEAD_NOT_FOUND
    if op in OBJECT_OPS:
        return NO_KEY
    if op == "UploadPartCopy":
        return NO_UPLOAD, NO_KEY  # neither the upload nor the source exists
    if op in UPLOAD_OPS:
        return NO_UPLOAD
    if op in ("DeleteObject", "DeleteBucketTagging", "PutBucketTagging"):
        return ("ok", 204)
    if op == "DeleteBucket":
        return ("BucketNotEmpty", 409)
    if op == "GetBucketTagging":
        return ("NoSuchTagSet", 404)
    return OK


def expected_refused(op, code):
    status = 403
    return (str(status), status) if op.startswith("Head") else (code, status)


differences = []
cases = 0


def expect(case, op, call, wanted):
    global cases
    cases += 1
    got = answer(call)
    if isinstance(wanted, tuple) and isinstance(wanted[0], str):
        wanted = (wanted,)
    if got not in wanted:
        differences.append("%s %s: got %s %d, AWS answers %s" % (case, op, got[0], got[1], " or ".join("%s %d" % w for w in wanted)))


owner.create_bucket(Bucket=bucket)
owner.put_object(Bucket=bucket, Key="present", Body=b"present")
upload = owner.create_multipart_upload(Bucket=bucket, Key="missing")["UploadId"]
owner.abort_multipart_upload(Bucket=bucket, Key="missing", UploadId=upload)  # a real id that no longer exists

for op, call in operations(owner, bucket + "-absent", "missing", upload).items():
    expect("missing bucket", op, call, expected_missing_bucket(op))
for op, call in operations(owner, bucket, "missing", upload).items():
    if op != "DeleteBucket":
        expect("missing key", op, call, expected_missing_key(op))
expect("missing key", "DeleteBucket", lambda: owner.delete_bucket(Bucket=bucket), ("BucketNotEmpty", 409))
for caller, code in (("other key", "AccessDenied"), ("unknown key", "InvalidAccessKeyId"), ("wrong secret", "SignatureDoesNotMatch")):
    for op, call in operations(CALLERS[caller], bucket, "present", upload).items():
        wanted = expected_refused(op, code)
        if caller == "other key" and op == "DeleteObjects":
            wanted = (("AccessDenied", 200), DENIED)  # AWS answers a refused key inside a 200 or refuses the request
        expect(caller, op, call, wanted)

# each operation's own documented errors
md5 = base64.b64encode(b"0" * 16).decode()
documented = [
    ("CreateBucket", "name too short", lambda: owner.create_bucket(Bucket="ab"), ("InvalidBucketName", 400)),
    ("CreateBucket", "upper case", lambda: owner.create_bucket(Bucket="Upper-Case"), ("InvalidBucketName", 400)),
    ("CreateBucket", "leading hyphen", lambda: owner.create_bucket(Bucket="-leading"), ("InvalidBucketName", 400)),
    ("CreateBucket", "IP address", lambda: owner.create_bucket(Bucket="192.168.5.4"), ("InvalidBucketName", 400)),
    ("CreateBucket", "another key's", lambda: CALLERS["other key"].create_bucket(Bucket=bucket), ("BucketAlreadyExists", 409)),
    ("GetObject", "range past the end", lambda: owner.get_object(Bucket=bucket, Key="present", Range="bytes=100-200"),
     ("InvalidRange", 416)),
    ("GetObject", "If-Match of another ETag", lambda: owner.get_object(Bucket=bucket, Key="present", IfMatch='"0000"'),
     ("PreconditionFailed", 412)),
    ("GetObject", "If-Unmodified-Since long ago", lambda: owner.get_object(Bucket=bucket, Key="present",
                                                                          IfUnmodifiedSince="Mon, 01 Jan 2001 00:00:00 GMT"),
     ("PreconditionFailed", 412)),
    ("GetObject", "If-None-Match of its ETag", lambda: owner.get_object(Bucket=bucket, Key="present",
                                                                       IfNoneMatch=owner.head_object(Bucket=bucket, Key="present")["ETag"]),
     ("304", 304)),
    ("GetObject", "partNumber past its parts", lambda: owner.get_object(Bucket=bucket, Key="present", PartNumber=3),
     ("InvalidPartNumber", 416)),
    ("HeadObject", "If-Match of another ETag", lambda: owner.head_object(Bucket=bucket, Key="present", IfMatch='"0000"'),
     ("412", 412)),
    ("PutObject", "Content-MD5 of other bytes", lambda: owner.put_object(Bucket=bucket, Key="md5", Body=b"x", ContentMD5=md5),
     ("BadDigest", 400)),
    ("PutObject", "Content-MD5 not 16 bytes", lambda: owner.put_object(Bucket=bucket, Key="md5", Body=b"x", ContentMD5="AAAA"),
     ("InvalidDigest", 400)),
    ("PutObject", "key over 1024 bytes", lambda: owner.put_object(Bucket=bucket, Key="k" * 1025, Body=b"x"),
     ("KeyTooLongError", 400)),
    ("PutObject", "unknown canned ACL", lambda: owner.put_object(Bucket=bucket, Key="acl", Body=b"x", ACL="authenticated-read"),
     ("NotImplemented", 501)),
    ("PutObject", "aws:kms encryption", lambda: owner.put_object(Bucket=bucket, Key="kms", Body=b"x", ServerSideEncryption="aws:kms"),
     ("NotImplemented", 501)),
    ("CopyObject", "onto itself unchanged", lambda: owner.copy_object(Bucket=bucket, Key="present",
                                                                     CopySource={"Bucket": bucket, "Key": "present"}),
     ("InvalidRequest", 400)),
    ("CopyObject", "If-Match of another ETag", lambda: owner.copy_object(Bucket=bucket, Key="copy", CopySourceIfMatch='"0000"',
                                                                        CopySource={"Bucket": bucket, "Key": "present"}),
     ("PreconditionFailed", 412)),
    ("ListObjectsV2", "a continuation token never given", lambda: owner.list_objects_v2(Bucket=bucket, ContinuationToken="garbage"),
     ("InvalidArgument", 400)),
    ("ListObjectsV2", "negative max-keys", lambda: owner.list_objects_v2(Bucket=bucket, MaxKeys=-1), ("InvalidArgument", 400)),
    ("DeleteObjects", "more than 1000 keys", lambda: owner.delete_objects(
        Bucket=bucket, Delete={"Objects": [{"Key": "k%d" % i} for i in range(1001)]}), ("MalformedXML", 400)),
    ("PutObjectTagging", "more than 10 tags", lambda: owner.put_object_tagging(
        Bucket=bucket, Key="present", Tagging={"TagSet": [{"Key": "k%d" % i, "Value": "v"} for i in range(11)]}),
     (("BadRequest", 400), ("InvalidTag", 400))),
    ("PutObjectTagging", "a key over 128 characters", lambda: owner.put_object_tagging(
        Bucket=bucket, Key="present", Tagging={"TagSet": [{"Key": "k" * 129, "Value": "v"}]}), ("InvalidTag", 400)),
    ("PutObjectTagging", "one key twice", lambda: owner.put_object_tagging(
        Bucket=bucket, Key="present", Tagging={"TagSet": [{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}]}),
     ("InvalidTag", 400)),
    ("GetObjectTagging", "an object without tags", lambda: owner.get_object_tagging(Bucket=bucket, Key="present"), OK),
    ("PutBucketAcl", "unknown canned ACL", lambda: owner.put_bucket_acl(Bucket=bucket, ACL="authenticated-read"),
     ("NotImplemented", 501)),
    ("PutObject", "user metadata over 2 KB", lambda: owner.put_object(Bucket=bucket, Key="meta", Body=b"x",
                                                                      Metadata={"big": "m" * 2100}), ("MetadataTooLarge", 400)),
    ("PutObject", "an unknown storage class", lambda: owner.put_object(Bucket=bucket, Key="class", Body=b"x", StorageClass="WARM"),
     ("InvalidStorageClass", 400)),
    ("CopyObject", "a source without a key", lambda: owner.copy_object(Bucket=bucket, Key="copy", CopySource=bucket),
     ("InvalidArgument", 400)),
    ("CopyObject", "a source bucket that does not exist", lambda: owner.copy_object(
        Bucket=bucket, Key="copy", CopySource={"Bucket": bucket + "-absent", "Key": "present"}), NO_BUCKET),
    ("GetObject", "a bucket name S3 refuses", lambda: owner.get_object(Bucket="no_such_bucket", Key="k"),
     (("InvalidBucketName", 400), NO_BUCKET)),
    ("ListObjectsV2", "max-keys not a number", lambda: with_query("list_objects_v2", {"max-keys": "many"}).list_objects_v2(Bucket=bucket),
     ("InvalidArgument", 400)),
    ("UploadPart", "an upload id never given", lambda: owner.upload_part(Bucket=bucket, Key="parts", UploadId="not-an-upload",
                                                                         PartNumber=1, Body=b"x"), NO_UPLOAD),
]
started = owner.create_multipart_upload(Bucket=bucket, Key="parts")["UploadId"]
small = owner.upload_part(Bucket=bucket, Key="parts", UploadId=started, PartNumber=1, Body=b"small")["ETag"]
last = owner.upload_part(Bucket=bucket, Key="parts", UploadId=started, PartNumber=2, Body=b"last")["ETag"]
documented += [
    ("UploadPart", "part number 0", lambda: owner.upload_part(Bucket=bucket, Key="parts", UploadId=started, PartNumber=0, Body=b"x"),
     ("InvalidArgument", 400)),
    ("UploadPart", "part number 10001", lambda: owner.upload_part(Bucket=bucket, Key="parts", UploadId=started, PartNumber=10001,
                                                                  Body=b"x"), ("InvalidArgument", 400)),
    ("UploadPartCopy", "range past the source", lambda: owner.upload_part_copy(
        Bucket=bucket, Key="parts", UploadId=started, PartNumber=3, CopySource={"Bucket": bucket, "Key": "present"},
        CopySourceRange="bytes=0-100"), ("InvalidRange", 416)),
    ("CompleteMultipartUpload", "a part never uploaded", lambda: owner.complete_multipart_upload(
        Bucket=bucket, Key="parts", UploadId=started, MultipartUpload={"Parts": [{"PartNumber": 5, "ETag": small}]}),
     ("InvalidPart", 400)),
    ("CompleteMultipartUpload", "another ETag", lambda: owner.complete_multipart_upload(
        Bucket=bucket, Key="parts", UploadId=started, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": '"0000"'}]}),
     ("InvalidPart", 400)),
    ("CompleteMultipartUpload", "parts out of order", lambda: owner.complete_multipart_upload(
        Bucket=bucket, Key="parts", UploadId=started, MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": last},
                                                                                  {"PartNumber": 1, "ETag": small}]}),
     ("InvalidPartOrder", 400)),
    ("CompleteMultipartUpload", "a part under 5 MiB before the last", lambda: owner.complete_multipart_upload(
        Bucket=bucket, Key="parts", UploadId=started, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": small},
                                                                                  {"PartNumber": 2, "ETag": last}]}),
     ("EntityTooSmall", 400)),
    ("CompleteMultipartUpload", "no parts", lambda: owner.complete_multipart_upload(
        Bucket=bucket, Key="parts", UploadId=started, MultipartUpload={"Parts": []}), ("MalformedXML", 400)),
    ("CompleteMultipartUpload", "another key's upload", lambda: CALLERS["other key"].complete_multipart_upload(
        Bucket=bucket, Key="parts", UploadId=started, MultipartUpload={"Parts": [{"PartNumber": 2, "ETag": last}]}), DENIED),
    ("DeleteBucket", "another key's", lambda: CALLERS["other key"].delete_bucket(Bucket=bucket), DENIED),
]
for op, case, call, wanted in documented:
    expect(case, op, call, wanted)
owner.abort_multipart_upload(Bucket=bucket, Key="parts", UploadId=started)

for line in differences:
    print("DIFF " + line)
print("%d cases, %d answered otherwise than AWS" % (cases, len(differences)))
sys.exit(1 if differences else 0)
