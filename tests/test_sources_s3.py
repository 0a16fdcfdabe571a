"""S3Source against a real moto server over HTTP (see tests/moto_server.py)."""

from __future__ import annotations

import socket
import time
import uuid
from collections.abc import Iterator
from typing import Any

import boto3
import pytest

from connectors.config import SourceConfig
from connectors.errors import SourceError, SourceUnavailable, TooLarge
from connectors.sources import S3Source, SourceEntry, make_source
from tests.moto_server import TEST_AWS_ENV, free_port, rewriting_proxy


@pytest.fixture
def s3(moto_endpoint: str) -> Any:
    return boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1")


@pytest.fixture
def bucket(s3: Any) -> str:
    name = f"b-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=name)
    return name


def cfg(bucket: str, endpoint: str, **kw: Any) -> SourceConfig:
    return SourceConfig(name="bk", kind="s3", bucket=bucket, endpoint_url=endpoint, **kw)


def make(bucket: str, endpoint: str, *, page_size: int = 1000, **kw: Any) -> S3Source:
    return S3Source(cfg(bucket, endpoint, **kw), page_size=page_size, max_attempts=2)


def listing(s: S3Source) -> dict[str, SourceEntry]:
    return {e.external_id: e for e in s.list()}


class CallCounter:
    """Counts API calls a client makes, via botocore's event hooks."""

    def __init__(self, source: S3Source) -> None:
        self.calls: list[str] = []
        source._client.meta.events.register("before-call.s3.*", self._hook)

    def _hook(self, model: Any, **_: Any) -> None:
        self.calls.append(model.name)


def fill(s3: Any, bucket: str) -> None:
    for key, body in [
        ("docs/a.txt", b"alpha"),
        ("docs/guide.md", b"# guide"),
        ("docs/sub/b.md", b"# b"),
        ("docs/sub/deeper/c.pdf", b"%PDF-1.4"),
        ("docs/sub/scratch.tmp", b"tmp"),
        ("docs/folder/", b""),  # a "directory" marker
        ("other/x.txt", b"outside the prefix"),
        ("docsX/y.txt", b"outside the prefix too"),
    ]:
        s3.put_object(Bucket=bucket, Key=key, Body=body)


def test_lists_objects_under_the_prefix(s3: Any, bucket: str, moto_endpoint: str) -> None:
    fill(s3, bucket)
    s = make(bucket, moto_endpoint, prefix="docs")
    entries = listing(s)
    assert sorted(entries) == [
        "a.txt",
        "guide.md",
        "sub/b.md",
        "sub/deeper/c.pdf",
        "sub/scratch.tmp",
    ]
    e = entries["sub/deeper/c.pdf"]
    head = s3.head_object(Bucket=bucket, Key="docs/sub/deeper/c.pdf")
    assert e.uri == f"s3://{bucket}/docs/sub/deeper/c.pdf"
    assert e.size == 8
    assert e.fingerprint == f"{head['ETag'].strip(chr(34))}-8"
    assert abs(e.modified_at - time.time()) < 120
    assert e.acl == ()
    assert e.metadata == {}
    assert s.read(e) == b"%PDF-1.4"
    assert sorted(listing(make(bucket, moto_endpoint, prefix="/docs/"))) == sorted(entries)
    whole = listing(make(bucket, moto_endpoint))
    assert "other/x.txt" in whole
    assert "docs/a.txt" in whole
    assert "docs/folder/" not in whole


def test_include_exclude(s3: Any, bucket: str, moto_endpoint: str) -> None:
    fill(s3, bucket)
    s = make(bucket, moto_endpoint, prefix="docs", include=["*.md", "*.pdf"], exclude=["deeper/"])
    assert sorted(listing(s)) == ["guide.md", "sub/b.md"]


def test_pagination_is_one_paged_listing_without_head_calls(
    s3: Any, bucket: str, moto_endpoint: str
) -> None:
    for i in range(5):
        s3.put_object(Bucket=bucket, Key=f"p/{i}.txt", Body=str(i).encode())
    s = make(bucket, moto_endpoint, prefix="p", page_size=2)
    counter = CallCounter(s)
    assert sorted(listing(s)) == [f"{i}.txt" for i in range(5)]
    assert counter.calls == ["ListObjectsV2"] * 3
    with pytest.raises(Exception, match="page_size"):
        make(bucket, moto_endpoint, page_size=1001)


def test_fingerprint_changes_with_new_bytes_and_deletes_disappear(
    s3: Any, bucket: str, moto_endpoint: str
) -> None:
    fill(s3, bucket)
    s = make(bucket, moto_endpoint, prefix="docs")
    before = listing(s)
    s3.put_object(Bucket=bucket, Key="docs/a.txt", Body=b"ALPHA")  # same size, new ETag
    s3.delete_object(Bucket=bucket, Key="docs/guide.md")
    after = listing(s)
    assert after["a.txt"].fingerprint != before["a.txt"].fingerprint
    assert after["a.txt"].size == before["a.txt"].size
    assert after["sub/b.md"].fingerprint == before["sub/b.md"].fingerprint
    assert "guide.md" not in after
    with pytest.raises(SourceError, match=r"guide\.md.*does not exist"):
        s.read(before["guide.md"])



BLOCKED = b"<html><body><h1>Access blocked by corporate proxy</h1></body></html>"


@pytest.mark.parametrize("blocked_page", ["first", "second"])
def test_a_reply_that_is_not_a_listing_fails_the_listing(
        s3: Any, bucket: str, moto_endpoint: str, blocked_page: str) -> None:
    """boto reads any 200 reply as an empty page with no next one: an HTML page a proxy sent
    for the second page ended the listing there, and a sync swept the objects of the pages
    never read as deleted (1,106 listed before, 1,000 after: 106 deleted, exit 0). The first
    page blocked read as an empty bucket. Both now fail the listing, naming the cause."""
    fill(s3, bucket)

    def block(method: str, path: str, status: int, body: bytes) -> tuple[int, bytes]:
        second = "continuation-token=" in path
        if method == "GET" and "list-type=2" in path and second == (blocked_page == "second"):
            return 200, BLOCKED
        return status, body

    with rewriting_proxy(moto_endpoint, block) as url:
        assert len(listing(make(bucket, moto_endpoint, prefix="docs", page_size=2))) == 5  # direct: all of them
        with pytest.raises(SourceError, match=r"reply \(HTTP 200\) is not an S3 listing"):
            listing(make(bucket, url, prefix="docs", page_size=2))


def test_describe_fills_acl_and_metadata(s3: Any, bucket: str, moto_endpoint: str) -> None:
    s3.put_object(
        Bucket=bucket,
        Key="a.txt",
        Body=b"a",
        Metadata={"acl": " alice, group:eng,alice,", "team": "docs"},
        ContentType="text/plain",
    )
    s3.put_object(Bucket=bucket, Key="b.txt", Body=b"b")
    s3.put_object(Bucket=bucket, Key="c.txt", Body=b"c", Metadata={"acl": ""})
    s = make(bucket, moto_endpoint)
    entries = listing(s)
    counter = CallCounter(s)
    a = s.describe(entries["a.txt"])
    assert counter.calls == ["HeadObject"]
    assert a.acl == ("alice", "group:eng")
    assert a.metadata == {
        "x-amz-meta-acl": "alice, group:eng,alice,",  # HTTP trims the header value
        "x-amz-meta-team": "docs",
        "acl_from": "metadata",
        "content_type": "text/plain",
    }
    assert a.fingerprint == entries["a.txt"].fingerprint
    assert a.external_id == "a.txt"
    b = s.describe(entries["b.txt"])
    assert b.acl == ("*",)
    assert b.metadata["acl_from"] == "default"
    assert s.describe(entries["c.txt"]).acl == ()  # present but empty: nobody
    with_cfg = make(bucket, moto_endpoint, acl=["group:staff"])
    assert with_cfg.describe(entries["b.txt"]).acl == ("group:staff",)
    s3.delete_object(Bucket=bucket, Key="b.txt")
    with pytest.raises(SourceError, match="does not exist"):
        s.describe(entries["b.txt"])


def test_metadata_keys_in_any_case_carry_the_acl(s3: Any, bucket: str, moto_endpoint: str) -> None:
    """MinIO sends `X-Amz-Meta-Acl`, and botocore keeps that case (`{"Acl": ...}`): the ACL must
    still be read, never fall back to the (public) default."""
    s3.put_object(Bucket=bucket, Key="salaries.md", Body=b"pay", Metadata={"acl": "group:hr"})
    s = make(bucket, moto_endpoint)
    entry = listing(s)["salaries.md"]
    s3_head = s._client.head_object

    def as_minio(**kw: Any) -> Any:
        head = s3_head(**kw)
        head["Metadata"] = {k.title(): v for k, v in head["Metadata"].items()}
        return head

    s._client.head_object = as_minio
    described = s.describe(entry)
    assert described.acl == ("group:hr",) and described.metadata["acl_from"] == "metadata"


def test_an_object_rewritten_between_describe_and_read_is_not_read(s3: Any, bucket: str, moto_endpoint: str) -> None:
    """The ACL comes from head_object and the bytes from get_object: a confidential version put
    between the two must not be read under the public version's ACL (If-Match on the ETag), nor
    a metadata-only rewrite (same ETag) under the old ACL."""
    s3.put_object(Bucket=bucket, Key="memo.md", Body=b"public memo")
    s = make(bucket, moto_endpoint)
    described = s.describe(listing(s)["memo.md"])
    assert described.acl == ("*",)
    s3.put_object(Bucket=bucket, Key="memo.md", Body=b"confidential memo", Metadata={"acl": "alice"})
    with pytest.raises(SourceError, match="rewritten between describe and read"):
        s.read(described)
    described = s.describe(listing(s)["memo.md"])
    assert described.acl == ("alice",) and s.read(described) == b"confidential memo"
    s3.copy_object(Bucket=bucket, Key="memo.md", CopySource={"Bucket": bucket, "Key": "memo.md"},
                   Metadata={"acl": "alice,bob"}, MetadataDirective="REPLACE")
    with pytest.raises(SourceError, match="ACL changed between describe and read"):
        s.read(described)


def test_read_size_limit(s3: Any, bucket: str, moto_endpoint: str) -> None:
    s3.put_object(Bucket=bucket, Key="big.bin", Body=b"0" * 5000)
    s = make(bucket, moto_endpoint, max_file_mb=0.001)
    counter = CallCounter(s)
    with pytest.raises(TooLarge):
        s.read(listing(s)["big.bin"])
    assert "GetObject" not in counter.calls


def test_probe(s3: Any, bucket: str, moto_endpoint: str) -> None:
    fill(s3, bucket)
    s = make(bucket, moto_endpoint, prefix="docs", page_size=2)
    p0 = s.probe()
    assert s.probe() == p0
    s3.put_object(Bucket=bucket, Key="other/z.txt", Body=b"outside the prefix")
    assert s.probe() == p0
    s3.put_object(Bucket=bucket, Key="docs/a.txt", Body=b"ALPHA")
    p1 = s.probe()
    assert p1 != p0
    s3.delete_object(Bucket=bucket, Key="docs/guide.md")
    p2 = s.probe()
    assert p2 != p1
    # A metadata-only rewrite (ACL change) keeps the ETag but bumps LastModified (1 s steps).
    time.sleep(1.05)
    s3.copy_object(
        Bucket=bucket,
        Key="docs/a.txt",
        CopySource={"Bucket": bucket, "Key": "docs/a.txt"},
        Metadata={"acl": "carol"},
        MetadataDirective="REPLACE",
    )
    assert s.probe() != p2


def test_make_source_builds_a_working_client(s3: Any, bucket: str, moto_endpoint: str) -> None:
    s3.put_object(Bucket=bucket, Key="k.txt", Body=b"k")
    s = make_source(cfg(bucket, moto_endpoint))
    assert isinstance(s, S3Source)
    assert [e.external_id for e in s.list()] == ["k.txt"]
    config = s._client.meta.config
    # botocore's "max_attempts" counts retries only; "total_max_attempts" counts attempts.
    assert config.retries == {"total_max_attempts": 5, "mode": "adaptive"}
    assert (config.connect_timeout, config.read_timeout) == (5.0, 30.0)
    assert s._client.meta.region_name == "us-east-1"


# -- errors ----------------------------------------------------------------------------------


def test_missing_bucket(moto_endpoint: str) -> None:
    s = make("no-such-bucket-here", moto_endpoint)
    with pytest.raises(SourceError, match=r"no-such-bucket-here.*does not exist") as exc:
        list(s.list())
    assert moto_endpoint in str(exc.value)
    with pytest.raises(SourceError):
        s.probe()


def test_a_path_in_the_endpoint_is_named_not_taken_for_a_deleted_object(s3: Any, bucket: str,
                                                                       moto_endpoint: str) -> None:
    """`endpoint_url: http://host:port/bucket` (a common slip) makes every listing ask for a
    key: the answer, NoSuchKey, was reported as an object "deleted since it was listed?"."""
    s = make(bucket, f"{moto_endpoint}/{bucket}")
    with pytest.raises(SourceUnavailable, match=r"listing of bucket .*path in endpoint_url") as exc:
        list(s.list())
    assert "deleted since" not in str(exc.value)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Test credentials without a server (signing needs some before any request is sent)."""
    for k, v in TEST_AWS_ENV.items():
        monkeypatch.setenv(k, v)


def test_endpoint_down_fails_fast(aws_env: None) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    s = S3Source(cfg("bkt", url), max_attempts=1, connect_timeout=1, read_timeout=1)
    t = time.monotonic()
    with pytest.raises(SourceError, match=r"127\.0\.0\.1.*unreachable"):
        list(s.list())
    assert time.monotonic() - t < 3


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    """A port that accepts TCP connections and never answers (a hung server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as srv:
        srv.bind(("127.0.0.1", 0))
        srv.listen(8)
        yield f"http://127.0.0.1:{srv.getsockname()[1]}"


def test_timeouts_and_tries_come_from_the_source_configuration(silent_endpoint: str, aws_env: None) -> None:
    """A hung endpoint held a sync ~150 s (30 s x 5 tries, fixed in the code): both are settings."""
    s = S3Source(cfg("bkt", silent_endpoint, read_timeout_s=0.3, max_attempts=1), connect_timeout=1)
    t = time.monotonic()
    with pytest.raises(SourceError, match="timed out"):
        list(s.list())
    assert time.monotonic() - t < 3
    defaults = S3Source(cfg("bkt", silent_endpoint))._client.meta.config
    assert defaults.read_timeout == 30 and defaults.retries["total_max_attempts"] == 5


def test_read_timeout(silent_endpoint: str, aws_env: None) -> None:
    s = S3Source(cfg("bkt", silent_endpoint), max_attempts=1, connect_timeout=1, read_timeout=0.3)
    t = time.monotonic()
    with pytest.raises(SourceError, match="timed out"):
        list(s.list())
    assert time.monotonic() - t < 3


@pytest.mark.parametrize(
    ("code", "status", "expected"),
    [
        ("AccessDenied", 403, r"s3://locked/.*access denied \(AccessDenied"),
        ("InvalidAccessKeyId", 403, r"credentials rejected \(InvalidAccessKeyId"),
        ("SlowDown", 503, "SlowDown"),
    ],
)
def test_service_errors_name_bucket_and_cause(
    code: str, status: int, expected: str, aws_env: None
) -> None:
    from botocore.stub import Stubber

    s = S3Source(cfg("locked", "http://127.0.0.1:9"), max_attempts=1)
    with Stubber(s._client) as stub:
        stub.add_client_error("list_objects_v2", code, "nope", status)
        with pytest.raises(SourceError, match=expected) as exc:
            list(s.list())
    assert "http://127.0.0.1:9" in str(exc.value)


def test_what_a_narrower_prefix_source_takes_is_not_listed_by_the_wider(s3: Any, bucket: str,
                                                                       moto_endpoint: str) -> None:
    """As for folders (`test_acl`): one prefix, the narrow source taking `hr/` by its include."""
    for key in ("corp/handbook.md", "corp/hr/salaries.md"):
        s3.put_object(Bucket=bucket, Key=key, Body=b"x")
    wide = cfg(bucket, moto_endpoint, prefix="corp")
    narrow = cfg(bucket, moto_endpoint, prefix="corp/", include=["hr/**"], acl=["hr"]).model_copy(update={"name": "hr"})
    assert [e.external_id for e in make_source(wide, [wide, narrow]).list()] == ["handbook.md"]
    assert [e.external_id for e in make_source(narrow, [wide, narrow]).list()] == ["hr/salaries.md"]
