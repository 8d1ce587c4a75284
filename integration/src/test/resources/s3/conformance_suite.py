"""S3 behaviour as AWS documents it, through boto3: the cases where a gateway is easy to get wrong.

Usage: /usr/bin/python3 conformance_suite.py ENDPOINT OWNER_KEY OWNER_SECRET OTHER_KEY OTHER_SECRET BUCKET
OWNER and OTHER are keys of two different uids. Prints one line per check and exits non-zero if any failed.
"""
import base64
import hashlib
import sys
import threading
import traceback
import urllib.error
import urllib.request

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, owner_key, owner_secret, other_key, other_secret, bucket = sys.argv[1:7]
failures = []


def client(key, secret):
    return boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=key, aws_secret_access_key=secret, region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, signature_version="s3v4", retries={"max_attempts": 1}))


s3 = client(owner_key, owner_secret)
other = client(other_key, other_secret)


def check(function):
    try:
        function()
        print("ok   " + function.__name__)
    except Exception:
        failures.append(function.__name__)
        print("FAIL " + function.__name__)
        traceback.print_exc(file=sys.stdout)
    sys.stdout.flush()
    return function


def error(call):
    """The error code and HTTP status a call failed with, or (None, 200)."""
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"], e.response["ResponseMetadata"]["HTTPStatusCode"]
    return None, 200


def with_headers(operation, headers):
    """A client whose calls of one operation carry extra headers (this boto3 predates IfMatch and IfNoneMatch on PUT)."""
    extra = client(owner_key, owner_secret)

    def add(request, **kwargs):
        for name, value in headers.items():
            request.headers[name] = value

    extra.meta.events.register("before-sign.s3." + operation, add)
    return extra


s3.create_bucket(Bucket=bucket)


@check
def delete_objects_keeps_spaces_in_keys():
    for key in ("_", "_ ", " "):
        s3.put_object(Bucket=bucket, Key="spaces/" + key, Body=key.encode())
    result = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": "spaces/_ "}, {"Key": "spaces/ "}]})
    assert sorted(d["Key"] for d in result["Deleted"]) == ["spaces/ ", "spaces/_ "], result
    left = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="spaces/")["Contents"]]
    assert left == ["spaces/_"], left


@check
def unimplemented_sub_resources_are_501_and_change_nothing():
    code, status = error(lambda: s3.put_bucket_versioning(Bucket=bucket, VersioningConfiguration={"Status": "Enabled"}))
    assert (code, status) == ("NotImplemented", 501), (code, status)
    code, status = error(lambda: s3.put_bucket_versioning(Bucket=bucket + "-none", VersioningConfiguration={"Status": "Enabled"}))
    assert status == 501, status
    assert error(lambda: s3.head_bucket(Bucket=bucket + "-none"))[1] == 404, "PUT ?versioning made a bucket"
    assert error(lambda: s3.put_bucket_lifecycle_configuration(Bucket=bucket, LifecycleConfiguration={"Rules": []}))[1] in (400, 501)
    assert error(lambda: s3.get_bucket_policy(Bucket=bucket))[0] == "NotImplemented"


@check
def server_side_encryption():
    s3.put_object(Bucket=bucket, Key="encrypted", Body=b"secret", ServerSideEncryption="AES256")
    got = s3.get_object(Bucket=bucket, Key="encrypted")
    assert got["Body"].read() == b"secret" and got["ServerSideEncryption"] == "AES256", got
    assert s3.head_object(Bucket=bucket, Key="encrypted")["ServerSideEncryption"] == "AES256"
    assert error(lambda: other.get_object(Bucket=bucket, Key="encrypted"))[1] == 403
    assert error(lambda: s3.put_object(Bucket=bucket, Key="kms", Body=b"secret", ServerSideEncryption="aws:kms"))[1] == 501
    # SSE-C keys travel with each request: refused without TLS, as S3 refuses them
    code, status = error(lambda: s3.put_object(Bucket=bucket, Key="customer", Body=b"secret", SSECustomerAlgorithm="AES256",
                                               SSECustomerKey="k" * 32))
    assert (code, status) == ("InvalidRequest", 400), (code, status)
    for key in ("kms", "customer"):
        assert error(lambda: s3.head_object(Bucket=bucket, Key=key))[1] == 404


@check
def objects_are_private_to_their_key():
    s3.put_object(Bucket=bucket, Key="private/one", Body=b"owner's")
    assert error(lambda: other.get_object(Bucket=bucket, Key="private/one"))[1] == 403
    assert error(lambda: other.list_objects_v2(Bucket=bucket))[0] == "AccessDenied"
    assert bucket not in [b["Name"] for b in other.list_buckets()["Buckets"]]
    mine = bucket + "-other"
    other.create_bucket(Bucket=mine)  # any key makes a bucket, and owns it
    assert mine in [b["Name"] for b in other.list_buckets()["Buckets"]]
    assert error(lambda: s3.create_bucket(Bucket=mine))[0] in ("BucketAlreadyExists", None)  # root may see it exists
    s3.put_object(Bucket=bucket, Key="private/shared", Body=b"shared", ACL="public-read")
    acl = s3.get_object_acl(Bucket=bucket, Key="private/shared")
    assert [g["Permission"] for g in acl["Grants"]] == ["FULL_CONTROL", "READ"], acl["Grants"]
    other.delete_bucket(Bucket=mine)


@check
def a_bucket_of_unfinished_uploads_can_be_deleted():
    name = bucket + "-uploads"
    s3.create_bucket(Bucket=name)
    s3.create_multipart_upload(Bucket=name, Key="never/finished")
    s3.delete_bucket(Bucket=name)
    assert error(lambda: s3.head_bucket(Bucket=name))[1] == 404


@check
def listing_echoes_and_prefixes():
    s3.put_object(Bucket=bucket, Key="list/a b", Body=b"x")
    slash = s3.list_objects_v2(Bucket=bucket, Prefix="/")
    assert slash["KeyCount"] == 0 and "Contents" not in slash, slash.get("Contents")
    empty_delimiter = s3.list_objects_v2(Bucket=bucket, Prefix="list/", Delimiter="")
    assert "Delimiter" not in empty_delimiter, empty_delimiter.get("Delimiter")
    assert [o["Key"] for o in empty_delimiter["Contents"]] == ["list/a b"]
    # boto3 asks for encoding-type=url itself and decodes what S3 encodes: v1 keys, markers and delimiter, not the echoed prefix
    v1 = s3.list_objects(Bucket=bucket, Prefix="list/a b", Delimiter=" ")
    assert v1["Prefix"] == "list/a b", v1["Prefix"]
    assert v1["Delimiter"] == " ", v1["Delimiter"]
    assert [o["Key"] for o in v1["Contents"]] == ["list/a b"], v1["Contents"]
    v2 = s3.list_objects_v2(Bucket=bucket, Prefix="list/a b")
    assert v2["Prefix"] == "list/a b" and [o["Key"] for o in v2["Contents"]] == ["list/a b"], v2


def multipart(key, parts):
    upload = s3.create_multipart_upload(Bucket=bucket, Key=key)["UploadId"]
    etags = []
    for number, body in enumerate(parts, 1):
        etags.append(s3.upload_part(Bucket=bucket, Key=key, UploadId=upload, PartNumber=number, Body=body)["ETag"])
    return upload, [{"PartNumber": n, "ETag": e} for n, e in enumerate(etags, 1)]


@check
def multipart_completion_parts_and_copies():
    first, second = b"1" * (5 << 20), b"2" * 1000
    upload, parts = multipart("mp/object", [first, second])
    done = s3.complete_multipart_upload(Bucket=bucket, Key="mp/object", UploadId=upload, MultipartUpload={"Parts": parts})
    again = s3.complete_multipart_upload(Bucket=bucket, Key="mp/object", UploadId=upload, MultipartUpload={"Parts": parts})
    assert again["ETag"] == done["ETag"], (again["ETag"], done["ETag"])
    head = s3.head_object(Bucket=bucket, Key="mp/object", PartNumber=2)
    assert head["PartsCount"] == 2 and head["ContentLength"] == 1000, head
    part = s3.get_object(Bucket=bucket, Key="mp/object", PartNumber=1)
    assert part["PartsCount"] == 2 and part["Body"].read() == first
    assert error(lambda: s3.get_object(Bucket=bucket, Key="mp/object", PartNumber=3)) == ("InvalidPartNumber", 416)
    assert error(lambda: s3.head_object(Bucket=bucket, Key="mp/object", PartNumber=3))[1] == 416
    copy = s3.create_multipart_upload(Bucket=bucket, Key="mp/copy")["UploadId"]
    code, status = error(lambda: s3.upload_part_copy(Bucket=bucket, Key="mp/copy", UploadId=copy, PartNumber=1,
                                                     CopySource={"Bucket": bucket, "Key": "mp/object"},
                                                     CopySourceRange="bytes=0-%d" % (len(first) + len(second))))
    assert code == "InvalidRange", (code, status)
    s3.abort_multipart_upload(Bucket=bucket, Key="mp/copy", UploadId=copy)


@check
def racing_uploads_of_a_part_leave_one_whole():
    """Racing uploads of one part number leave exactly one of them whole, and ListParts names which."""
    upload = s3.create_multipart_upload(Bucket=bucket, Key="mp/raced")["UploadId"]
    uploaded = {}
    lock = threading.Lock()

    def put(body):
        etag = s3.upload_part(Bucket=bucket, Key="mp/raced", UploadId=upload, PartNumber=1, Body=body)["ETag"]
        with lock:
            uploaded[etag] = body

    threads = [threading.Thread(target=put, args=(bytes([65 + i]) * (1 << 20),)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # which upload finished last on the server is not something a client can observe; the listing is
    parts = s3.list_parts(Bucket=bucket, Key="mp/raced", UploadId=upload)["Parts"]
    assert len(parts) == 1 and parts[0]["ETag"] in uploaded, (parts, list(uploaded))
    etag = parts[0]["ETag"]
    s3.complete_multipart_upload(Bucket=bucket, Key="mp/raced", UploadId=upload,
                                 MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": etag}]})
    assert s3.get_object(Bucket=bucket, Key="mp/raced")["Body"].read() == uploaded[etag]


@check
def conditional_writes():
    s3.put_object(Bucket=bucket, Key="cond/object", Body=b"first")
    wrong = with_headers("PutObject", {"If-Match": '"0123456789abcdef0123456789abcdef"'})
    assert error(lambda: wrong.put_object(Bucket=bucket, Key="cond/object", Body=b"second")) == ("PreconditionFailed", 412)
    assert s3.get_object(Bucket=bucket, Key="cond/object")["Body"].read() == b"first"
    right = with_headers("PutObject", {"If-Match": '"%s"' % hashlib.md5(b"first").hexdigest()})
    right.put_object(Bucket=bucket, Key="cond/object", Body=b"second")
    assert s3.get_object(Bucket=bucket, Key="cond/object")["Body"].read() == b"second"
    absent = with_headers("PutObject", {"If-Match": "*"})
    assert error(lambda: absent.put_object(Bucket=bucket, Key="cond/missing", Body=b"x"))[0] == "NoSuchKey"
    etag_none = with_headers("PutObject", {"If-None-Match": '"%s"' % hashlib.md5(b"second").hexdigest()})
    assert error(lambda: etag_none.put_object(Bucket=bucket, Key="cond/object", Body=b"third"))[1] == 501
    star = with_headers("PutObject", {"If-None-Match": "*"})
    assert error(lambda: star.put_object(Bucket=bucket, Key="cond/object", Body=b"third")) == ("PreconditionFailed", 412)
    upload, parts = multipart("cond/object", [b"multi"])
    star_complete = with_headers("CompleteMultipartUpload", {"If-None-Match": "*"})
    code, status = error(lambda: star_complete.complete_multipart_upload(Bucket=bucket, Key="cond/object", UploadId=upload,
                                                                         MultipartUpload={"Parts": parts}))
    assert (code, status) == ("PreconditionFailed", 412), (code, status)
    assert s3.get_object(Bucket=bucket, Key="cond/object")["Body"].read() == b"second"
    s3.abort_multipart_upload(Bucket=bucket, Key="cond/object", UploadId=upload)


@check
def expired_presigned_urls_are_403():
    s3.put_object(Bucket=bucket, Key="presigned/object", Body=b"x")
    # botocore will not presign for 0 seconds; S3 checks the expiry before the signature, so the edited URL tells
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "presigned/object"}, ExpiresIn=60)
    url = url.replace("X-Amz-Expires=60", "X-Amz-Expires=0")
    try:
        urllib.request.urlopen(url)
        raise AssertionError("an expired URL was served")
    except urllib.error.HTTPError as e:
        body = e.read().decode()
        assert e.code == 403 and "<Code>AccessDenied</Code>" in body and "expired" in body, (e.code, body)


@check
def streaming_uploads_do_not_keep_aws_chunked():
    s3.put_object(Bucket=bucket, Key="encoding/plain", Body=b"x", ContentEncoding="gzip")
    assert s3.head_object(Bucket=bucket, Key="encoding/plain")["ContentEncoding"] == "gzip"
    chunked = with_headers("PutObject", {"Content-Encoding": "aws-chunked,gzip"})
    chunked.put_object(Bucket=bucket, Key="encoding/chunked", Body=b"x")
    assert s3.head_object(Bucket=bucket, Key="encoding/chunked").get("ContentEncoding") == "gzip"


@check
def flexible_checksums_are_verified_kept_and_answered():
    body = b"checksummed " * 1000
    expected = base64.b64encode(hashlib.sha256(body).digest()).decode()
    put = s3.put_object(Bucket=bucket, Key="sums/object", Body=body, ChecksumAlgorithm="SHA256")
    assert put["ChecksumSHA256"] == expected, put
    head = s3.head_object(Bucket=bucket, Key="sums/object", ChecksumMode="ENABLED")
    assert head["ChecksumSHA256"] == expected, head
    assert "ChecksumSHA256" not in s3.head_object(Bucket=bucket, Key="sums/object")
    wrong = with_headers("PutObject", {"x-amz-checksum-crc32": "AAAAAA=="})
    assert error(lambda: wrong.put_object(Bucket=bucket, Key="sums/wrong", Body=body)) == ("BadDigest", 400)
    assert error(lambda: s3.head_object(Bucket=bucket, Key="sums/wrong"))[1] == 404
    two = with_headers("PutObject", {"x-amz-checksum-crc32": "AAAAAA==", "x-amz-checksum-crc32c": "AAAAAA=="})
    assert error(lambda: two.put_object(Bucket=bucket, Key="sums/wrong", Body=body))[0] == "InvalidRequest"
    attributes = s3.get_object_attributes(Bucket=bucket, Key="sums/object", ObjectAttributes=["ETag", "Checksum", "ObjectSize"])
    assert attributes["ETag"] == hashlib.md5(body).hexdigest() and attributes["ObjectSize"] == len(body), attributes
    assert attributes["Checksum"]["ChecksumSHA256"] == expected, attributes
    assert error(lambda: s3.get_object_attributes(Bucket=bucket, Key="sums/object", ObjectAttributes=["Bogus"]))[0] == "InvalidArgument"


@check
def multipart_checksums_combine():
    upload = s3.create_multipart_upload(Bucket=bucket, Key="sums/multipart", ChecksumAlgorithm="SHA1")["UploadId"]
    parts, sums = [b"a" * (5 << 20), b"b" * 100], []
    done = []
    for number, body in enumerate(parts, 1):
        part = s3.upload_part(Bucket=bucket, Key="sums/multipart", UploadId=upload, PartNumber=number, Body=body, ChecksumAlgorithm="SHA1")
        assert part["ChecksumSHA1"] == base64.b64encode(hashlib.sha1(body).digest()).decode(), part
        sums.append(hashlib.sha1(body).digest())
        done.append({"PartNumber": number, "ETag": part["ETag"], "ChecksumSHA1": part["ChecksumSHA1"]})
    complete = s3.complete_multipart_upload(Bucket=bucket, Key="sums/multipart", UploadId=upload, MultipartUpload={"Parts": done})
    composite = base64.b64encode(hashlib.sha1(b"".join(sums)).digest()).decode() + "-2"
    assert complete["ChecksumSHA1"] == composite, complete
    assert s3.head_object(Bucket=bucket, Key="sums/multipart", ChecksumMode="ENABLED")["ChecksumSHA1"] == composite
    listed = s3.get_object_attributes(Bucket=bucket, Key="sums/multipart", ObjectAttributes=["ObjectParts"])["ObjectParts"]
    assert listed["TotalPartsCount"] == 2 and [p["Size"] for p in listed["Parts"]] == [5 << 20, 100], listed


@check
def object_and_bucket_tagging():
    s3.put_object(Bucket=bucket, Key="tags/object", Body=b"x", Tagging="a=1&b=two%20words")
    assert s3.get_object_tagging(Bucket=bucket, Key="tags/object")["TagSet"] == [{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "two words"}]
    s3.put_object_tagging(Bucket=bucket, Key="tags/object", Tagging={"TagSet": [{"Key": "k", "Value": "v"}]})
    assert s3.get_object_tagging(Bucket=bucket, Key="tags/object")["TagSet"] == [{"Key": "k", "Value": "v"}]
    assert error(lambda: other.get_object_tagging(Bucket=bucket, Key="tags/object"))[0] == "AccessDenied"
    duplicate = {"TagSet": [{"Key": "k", "Value": "1"}, {"Key": "k", "Value": "2"}]}
    assert error(lambda: s3.put_object_tagging(Bucket=bucket, Key="tags/object", Tagging=duplicate)) == ("InvalidTag", 400)
    assert error(lambda: s3.get_object_tagging(Bucket=bucket, Key="tags/missing"))[0] == "NoSuchKey"
    s3.delete_object_tagging(Bucket=bucket, Key="tags/object")
    assert s3.get_object_tagging(Bucket=bucket, Key="tags/object")["TagSet"] == []
    assert error(lambda: s3.get_bucket_tagging(Bucket=bucket)) == ("NoSuchTagSet", 404)
    s3.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": [{"Key": "team", "Value": "ml"}]})
    assert s3.get_bucket_tagging(Bucket=bucket)["TagSet"] == [{"Key": "team", "Value": "ml"}]
    assert error(lambda: other.put_bucket_tagging(Bucket=bucket, Tagging={"TagSet": []}))[0] == "AccessDenied"
    s3.delete_bucket_tagging(Bucket=bucket)
    assert error(lambda: s3.get_bucket_tagging(Bucket=bucket))[0] == "NoSuchTagSet"


print("%d checks failed: %s" % (len(failures), failures) if failures else "conformance suite: all checks passed")
sys.exit(1 if failures else 0)
