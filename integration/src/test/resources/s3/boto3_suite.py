"""The S3 gateway under boto3, as a data pipeline or notebook uses it (path-style addressing).

Usage: /usr/bin/python3 boto3_suite.py ENDPOINT ACCESS_KEY SECRET_KEY BUCKET
Exits non-zero with a message on the first mismatch.
"""
import hashlib
import os
import sys
import urllib.request

import boto3
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, access_key, secret_key, bucket = sys.argv[1:5]
# boto3 1.26 presigns with Signature Version 2 unless told otherwise; the gateway speaks only version 4
s3 = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=access_key, aws_secret_access_key=secret_key,
                  region_name="us-east-1", config=Config(s3={"addressing_style": "path"}, signature_version="s3v4",
                                                         retries={"max_attempts": 1}))


def check(condition, message):
    if not condition:
        print("FAILED: " + message)
        sys.exit(1)


def error_code(call):
    try:
        call()
    except ClientError as e:
        return e.response["Error"]["Code"]
    return None


s3.create_bucket(Bucket=bucket)
check(bucket in [b["Name"] for b in s3.list_buckets()["Buckets"]], "list_buckets shows the new bucket")

# put / get / head with metadata
body = os.urandom(1 << 20)
put = s3.put_object(Bucket=bucket, Key="data/blob.bin", Body=body, ContentType="application/x-blob", Metadata={"epoch": "3"})
check(put["ETag"] == '"%s"' % hashlib.md5(body).hexdigest(), "PutObject ETag is the MD5")
got = s3.get_object(Bucket=bucket, Key="data/blob.bin")
check(got["Body"].read() == body, "GetObject returns the bytes")
check(got["ContentType"] == "application/x-blob" and got["Metadata"] == {"epoch": "3"}, "content type and metadata")
check(s3.head_object(Bucket=bucket, Key="data/blob.bin")["ContentLength"] == len(body), "HeadObject length")

# ranges
check(s3.get_object(Bucket=bucket, Key="data/blob.bin", Range="bytes=10-19")["Body"].read() == body[10:20], "range")
check(s3.get_object(Bucket=bucket, Key="data/blob.bin", Range="bytes=-7")["Body"].read() == body[-7:], "suffix range")
check(s3.get_object(Bucket=bucket, Key="data/blob.bin", Range="bytes=1048570-")["Body"].read() == body[1048570:], "open range")
check(error_code(lambda: s3.get_object(Bucket=bucket, Key="data/blob.bin", Range="bytes=2000000-")) == "InvalidRange", "InvalidRange")
check(error_code(lambda: s3.get_object(Bucket=bucket, Key="data/none")) == "NoSuchKey", "NoSuchKey")

# listing with pagination (paginator follows continuation tokens)
for i in range(25):
    s3.put_object(Bucket=bucket, Key="many/k%03d" % i, Body=b"%d" % i)
keys = []
for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix="many/", PaginationConfig={"PageSize": 4}):
    keys += [o["Key"] for o in page.get("Contents", [])]
check(keys == ["many/k%03d" % i for i in range(25)], "paginated listing in order: %s" % keys[:5])
top = s3.list_objects_v2(Bucket=bucket, Delimiter="/")
check([p["Prefix"] for p in top["CommonPrefixes"]] == ["data/", "many/"], "common prefixes")
v1 = s3.list_objects(Bucket=bucket, Prefix="many/", Marker="many/k020")
check([o["Key"] for o in v1["Contents"]] == ["many/k%03d" % i for i in range(21, 25)], "v1 listing with a marker")

# multipart upload through the transfer manager (several parts, threads), and by hand
big = os.urandom(13 << 20)
with open("/tmp/boto3-suite-big.bin", "wb") as f:
    f.write(big)
s3.upload_file("/tmp/boto3-suite-big.bin", bucket, "big/upload.bin",
               Config=TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20, max_concurrency=3))
head = s3.head_object(Bucket=bucket, Key="big/upload.bin")
check(head["ContentLength"] == len(big) and head["ETag"].endswith('-3"'), "multipart ETag form: %s" % head["ETag"])
s3.download_file(bucket, "big/upload.bin", "/tmp/boto3-suite-big.out",
                 Config=TransferConfig(multipart_threshold=4 << 20, multipart_chunksize=4 << 20, max_concurrency=3))
with open("/tmp/boto3-suite-big.out", "rb") as f:
    check(f.read() == big, "ranged parallel download")
os.remove("/tmp/boto3-suite-big.bin")
os.remove("/tmp/boto3-suite-big.out")
upload = s3.create_multipart_upload(Bucket=bucket, Key="big/manual.bin")["UploadId"]
p1 = s3.upload_part(Bucket=bucket, Key="big/manual.bin", UploadId=upload, PartNumber=1, Body=big[:5 << 20])["ETag"]
p2 = s3.upload_part(Bucket=bucket, Key="big/manual.bin", UploadId=upload, PartNumber=2, Body=big[5 << 20:6 << 20])["ETag"]
parts = s3.list_parts(Bucket=bucket, Key="big/manual.bin", UploadId=upload)["Parts"]
check([p["PartNumber"] for p in parts] == [1, 2], "list_parts")
check(upload in [u["UploadId"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])], "list_multipart_uploads")
s3.complete_multipart_upload(Bucket=bucket, Key="big/manual.bin", UploadId=upload,
                             MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": p1}, {"PartNumber": 2, "ETag": p2}]})
check(s3.get_object(Bucket=bucket, Key="big/manual.bin")["Body"].read() == big[:6 << 20], "completed upload")
aborted = s3.create_multipart_upload(Bucket=bucket, Key="big/aborted.bin")["UploadId"]
s3.abort_multipart_upload(Bucket=bucket, Key="big/aborted.bin", UploadId=aborted)
check(error_code(lambda: s3.list_parts(Bucket=bucket, Key="big/aborted.bin", UploadId=aborted)) == "NoSuchUpload", "aborted")

# copy (metadata kept, then replaced)
s3.copy_object(Bucket=bucket, Key="copy/blob.bin", CopySource={"Bucket": bucket, "Key": "data/blob.bin"})
copied = s3.get_object(Bucket=bucket, Key="copy/blob.bin")
check(copied["Body"].read() == body and copied["Metadata"] == {"epoch": "3"}, "copy keeps metadata")
s3.copy_object(Bucket=bucket, Key="copy/blob.bin", CopySource={"Bucket": bucket, "Key": "copy/blob.bin"},
               MetadataDirective="REPLACE", Metadata={"epoch": "4"}, ContentType="text/plain")
head = s3.head_object(Bucket=bucket, Key="copy/blob.bin")
check(head["Metadata"] == {"epoch": "4"} and head["ContentType"] == "text/plain", "copy replaces metadata")

# presigned URLs work with plain urllib
url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": "data/blob.bin"}, ExpiresIn=300)
with urllib.request.urlopen(url) as response:
    check(response.read() == body, "presigned GET")
put_url = s3.generate_presigned_url("put_object", Params={"Bucket": bucket, "Key": "presigned/put.txt"}, ExpiresIn=300)
request = urllib.request.Request(put_url, data=b"presigned body", method="PUT")
with urllib.request.urlopen(request) as response:
    check(response.status == 200, "presigned PUT")
check(s3.get_object(Bucket=bucket, Key="presigned/put.txt")["Body"].read() == b"presigned body", "presigned PUT stored")

# batch delete, then the bucket empties and goes
everything = [o["Key"] for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket) for o in page.get("Contents", [])]
deleted = s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in everything]})
check(len(deleted["Deleted"]) == len(everything) and not deleted.get("Errors"), "delete_objects")
check(s3.list_objects_v2(Bucket=bucket)["KeyCount"] == 0, "bucket is empty")
s3.delete_bucket(Bucket=bucket)
check(error_code(lambda: s3.head_bucket(Bucket=bucket)) in ("404", "NoSuchBucket"), "bucket deleted")
print("boto3 suite: all checks passed (%d objects)" % len(everything))
