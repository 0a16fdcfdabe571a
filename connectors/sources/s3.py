"""An S3 bucket (or any S3-compatible endpoint: MinIO, moto) as a source.

Listing is one paginated `list_objects_v2` under the prefix. The prefix is a folder: `docs`
and `docs/` both list `docs/...`, and `external_id` is the key with that folder stripped
(`docs/a/b.pdf` -> `a/b.pdf`). Keys ending in `/` (folder markers) are skipped. `fingerprint`
is `"{etag}-{size}"`: LastModified has one-second resolution, the ETag changes with the bytes.

ACL and metadata cost one `head_object` per object, so `list()` does not fetch them: its
entries carry `acl=()` and empty metadata (`needs_describe` is True). Call `describe(entry)`
for the entries a sync is going to process (new, or fingerprint or `modified_at` changed) to
fill them; a large unchanged bucket then costs one listing, not one request per object.
`modified_at` matters there: rewriting only the metadata (copy-in-place) keeps the ETag but
bumps LastModified. The ACL is the `x-amz-meta-acl` user metadata, comma-separated
principals; absent -> the source's configured `acl`, else `("*",)`; present but empty -> `()`
(nobody, fail closed).

Every boto/botocore failure (NoSuchBucket, AccessDenied, bad credentials, endpoint down,
timeouts) becomes a `SourceError` naming the bucket, the endpoint and the cause. The client
retries throttling and 5xx replies with adaptive backoff (`max_attempts`), so an error that
reaches us is one that retrying did not fix.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
import threading
from collections.abc import Iterator, Sequence
from datetime import datetime
from typing import Any, cast

import boto3
from botocore.config import Config
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
    ConnectTimeoutError,
    EndpointConnectionError,
    FlexibleChecksumError,
    NoCredentialsError,
    ReadTimeoutError,
)

from connectors.acl import parse_list, source_default
from connectors.config import SourceConfig
from connectors.errors import ConfigError, SourceError, SourceUnavailable, TooLarge
from connectors.sources.base import SourceEntry
from connectors.sources.globs import PathFilter

__all__ = ["DEFAULT_REGION", "S3Source", "parse_acl"]

DEFAULT_REGION = "us-east-1"
# error codes that say the source, not the object, is out of reach (with any 5xx after retries)
_SOURCE_WIDE = frozenset({"NoSuchBucket", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken"})


_session_lock = threading.Lock()
_session: boto3.session.Session | None = None


def _new_client(endpoint_url: str | None, region: str, config: Config) -> Any:
    """A client from one shared boto3 session: a fresh session re-reads the S3 service model
    (about 0.3 s a client), a shared one about 10 ms. Sessions are not thread-safe, so
    creation is serialised; the clients themselves are."""
    global _session
    with _session_lock:
        if _session is None:
            _session = boto3.session.Session()
        return _session.client("s3", endpoint_url=endpoint_url, region_name=region, config=config)


parse_acl = parse_list  # `"alice, group:eng,"` -> `("alice", "group:eng")` (connectors.acl)


def _whole_seconds(when: datetime) -> float:
    """A LastModified as whole seconds. HEAD's Last-Modified (an HTTP date) has no fraction; a
    listing's may (MinIO lists real milliseconds, AWS and moto `.000`): compared as they came,
    every object of such a store differed from what describe() stored, and each sync described
    and read every object again."""
    return float(math.floor(when.timestamp()))


def _bare_400(e: ClientError) -> bool:
    return (e.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 400
            and str(e.response.get("Error", {}).get("Code", "")) in ("", "400"))


def _etag(raw: str) -> str:
    return raw.strip('"')


def _user_metadata(reply: dict[str, Any]) -> dict[str, str]:
    """An object's user metadata with lower-case keys: botocore keeps the case the server sent,
    and MinIO sends `X-Amz-Meta-Acl` (an `Acl` key would otherwise be missed: public)."""
    return {str(k).lower(): v for k, v in (reply.get("Metadata") or {}).items()}


class S3Source:
    """Lists, describes and reads the objects under `s3://bucket/prefix/`.

    `client` lets callers inject a ready boto3 S3 client (tests, custom sessions); otherwise one
    is built from the config with the given timeouts and retry budget. `page_size` is the
    `MaxKeys` of each listing page (1..1000).
    """

    needs_describe = True  # list() leaves acl/metadata empty; see describe()

    def __init__(
        self,
        cfg: SourceConfig,
        client: Any | None = None,
        *,
        page_size: int = 1000,
        connect_timeout: float = 5.0,
        read_timeout: float | None = None,
        max_attempts: int | None = None,
        ceded: Sequence[tuple[str, str, PathFilter]] = (),
    ) -> None:
        """`ceded`: what narrower sources over this one's files take (`PathFilter`)."""
        if cfg.kind != "s3" or not cfg.bucket:
            raise ConfigError(f"source {cfg.name!r}: S3Source needs kind s3 and a bucket")
        if not 1 <= page_size <= 1000:
            raise ConfigError(f"source {cfg.name!r}: page_size must be 1..1000, got {page_size}")
        self.name = cfg.name
        self.bucket = cfg.bucket
        self.prefix = cfg.prefix.strip("/") + "/" if cfg.prefix.strip("/") else ""
        self.endpoint = cfg.endpoint_url or f"AWS S3 ({cfg.region or DEFAULT_REGION})"
        self.page_size = page_size
        self.max_bytes = int(cfg.max_file_mb * 1024 * 1024)
        read_timeout = cfg.read_timeout_s if read_timeout is None else read_timeout
        max_attempts = cfg.max_attempts if max_attempts is None else max_attempts
        self._filter = PathFilter(cfg.include, cfg.exclude, ceded)
        self._default = source_default(cfg)
        self._client = client or _new_client(
            cfg.endpoint_url,
            cfg.region or DEFAULT_REGION,
            Config(
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                # "total_max_attempts" counts the first try; botocore's "max_attempts" would
                # count retries only (5 -> 6 requests).
                retries={"total_max_attempts": max_attempts, "mode": "adaptive"},
            ),
        )

    # -- errors --------------------------------------------------------------------------

    def _fail(self, action: str, e: Exception, key: str | None = None) -> SourceError:
        """A SourceError that names what we tried, where, and why it failed; a SourceUnavailable
        when the cause is the whole source, not this object (`_SOURCE_WIDE`)."""
        where = f"s3://{self.bucket}/{key if key is not None else self.prefix}"
        # the endpoint cannot be reached at all, or it refuses who we are: no object can be read
        wide = isinstance(e, (EndpointConnectionError, ConnectTimeoutError, NoCredentialsError))
        # one object's body can stall, or arrive changed (its checksum fails): a run of them is
        # the source's failure (`_Sweep.streak`), not every object's. Checksum failures were not
        # counted, and a proxy answering every read with a log-in page made a sync exit 0 with
        # every object a dead letter and no last_error (a robustness pass)
        transient = isinstance(e, (ReadTimeoutError, FlexibleChecksumError))
        if isinstance(e, ClientError):
            err = e.response.get("Error", {})
            code = str(err.get("Code", ""))
            status = e.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            wide = code in _SOURCE_WIDE
            transient = isinstance(status, int) and status >= 500
            if code == "NoSuchBucket":
                cause = f"bucket {self.bucket!r} does not exist"
            elif code in ("NoSuchKey", "404") and action == "list":
                # a listing names no object: the request's path is not the bucket's (a bucket or a
                # path left in endpoint_url), so no object of this source can be read
                wide = True
                cause = (f"the endpoint answered {code} to a listing of bucket {self.bucket!r}: is there a bucket "
                         "or a path in endpoint_url? It must be the service's address alone")
            elif code in ("NoSuchKey", "404"):
                cause = "object does not exist (deleted since it was listed?)"
            elif code in ("InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken"):
                cause = f"credentials rejected ({code})"
            elif code in ("AccessDenied", "403") or status == 403:
                cause = f"access denied ({code}: {err.get('Message') or 'forbidden'})"
            elif _bare_400(e):  # a HEAD reply has no body, so no code
                cause = "400 Bad Request with no error code (an object encrypted with a customer key, SSE-C?)"
            else:
                cause = f"{code or status}: {err.get('Message') or e}"
        elif isinstance(e, EndpointConnectionError):
            cause = "endpoint unreachable (connection failed)"
        elif isinstance(e, (ConnectTimeoutError, ReadTimeoutError)):
            cause = f"timed out ({type(e).__name__})"
        elif isinstance(e, FlexibleChecksumError):
            cause = f"the body failed its checksum, changed on the way (a proxy answering for S3?): {e}"
        elif isinstance(e, NoCredentialsError):
            cause = "no AWS credentials found (set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY)"
        else:
            cause = f"{type(e).__name__}: {e}"
        message = f"source {self.name!r}: cannot {action} {where} at {self.endpoint}: {cause}"
        return SourceUnavailable(message) if wide else SourceError(message, transient=transient)

    def key_of(self, entry: SourceEntry) -> str:
        return self.prefix + entry.external_id

    # -- listing -------------------------------------------------------------------------

    def list(self) -> Iterator[SourceEntry]:
        """Every matching object (one paginated listing; acl/metadata left for describe())."""
        pages = self._client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket,
            Prefix=self.prefix,
            PaginationConfig={"PageSize": self.page_size},
        )
        try:
            for page in pages:
                for obj in self._listing_page(page).get("Contents", ()):
                    key: str = obj["Key"]
                    if key.endswith("/"):
                        continue
                    rel = key[len(self.prefix) :]
                    if not self._filter(rel):
                        continue
                    size = int(obj["Size"])
                    yield SourceEntry(
                        external_id=rel,
                        uri=f"s3://{self.bucket}/{key}",
                        size=size,
                        fingerprint=f"{_etag(obj['ETag'])}-{size}",
                        modified_at=_whole_seconds(obj["LastModified"]),
                    )
        except (BotoCoreError, ClientError) as e:
            raise self._fail("list", e) from e

    def _listing_page(self, page: dict[str, Any]) -> dict[str, Any]:
        """`page`, refused unless it is a ListObjectsV2 reply. boto reads any 200 reply (an HTML
        page from a corporate proxy or a captive portal) as an empty page without a next one,
        so a listing ended there looked complete, and a sync swept the objects of the pages it
        never read as deleted (found by an S3 operator pass). Every S3 and S3-compatible store
        sends IsTruncated, and a continuation token when it is true."""
        truncated = page.get("IsTruncated")
        if truncated is None or (truncated and not page.get("NextContinuationToken")):
            status = page.get("ResponseMetadata", {}).get("HTTPStatusCode")
            raise SourceUnavailable(
                f"source {self.name!r}: cannot list s3://{self.bucket}/{self.prefix} at {self.endpoint}: the reply "
                f"(HTTP {status}) is not an S3 listing (a proxy, or a service other than S3, answered?)")
        return page

    def describe(self, entry: SourceEntry) -> SourceEntry:
        """The entry with ACL and metadata filled in from `head_object`.

        Size, fingerprint and `modified_at` are refreshed from the same reply, so they describe
        a version no older than the bytes a following `read()` returns.
        """
        key = self.key_of(entry)
        try:
            head = self._client.head_object(Bucket=self.bucket, Key=key)
        except (BotoCoreError, ClientError) as e:
            if isinstance(e, ClientError) and _bare_400(e):
                self._check_credentials()  # the source's failure, not this object's, when they fail
            raise self._fail("describe", e, key) from e
        user = _user_metadata(head)
        acl, origin = self._acl_of(user)
        meta = {f"x-amz-meta-{k}": v for k, v in user.items()}
        meta["acl_from"] = origin
        if head.get("ContentType"):
            meta["content_type"] = head["ContentType"]
        size = int(head.get("ContentLength", entry.size))
        etag = _etag(head.get("ETag", ""))
        modified = head.get("LastModified")
        return dataclasses.replace(
            entry,
            size=size,
            fingerprint=f"{etag}-{size}" if etag else entry.fingerprint,
            modified_at=_whole_seconds(modified) if modified else entry.modified_at,
            acl=acl,
            metadata=meta,
        )

    def _check_credentials(self) -> None:
        """After a HEAD refused with a bare 400, which says neither why nor whose fault (an
        expired session token refuses every request so; an object encrypted with a customer key,
        SSE-C, refuses only its own): one listing request, whose reply has a body and so an
        error code. A credential failure is the source's (SourceUnavailable: the sync stops with
        one reason instead of dead-lettering every changed object as "400: Bad Request")."""
        try:
            self._client.list_objects_v2(Bucket=self.bucket, Prefix=self.prefix, MaxKeys=1)
        except (BotoCoreError, ClientError) as e:
            err = self._fail("list", e)
            meta = e.response.get("ResponseMetadata", {}) if isinstance(e, ClientError) else {}
            status = meta.get("HTTPStatusCode")
            if isinstance(status, int) and 400 <= status < 500:
                # the whole listing went through minutes ago: refused now, whatever the store
                # calls it (InvalidToken, AccessDenied, ...), it is the source's failure
                raise SourceUnavailable(str(err)) from e
            raise err from e

    def _acl_of(self, user: dict[str, str]) -> tuple[tuple[str, ...], str]:
        """(principals, origin) from an object's user metadata, else the source's default."""
        if "acl" in user:
            return parse_acl(user["acl"]), "metadata"
        return self._default.principals, self._default.origin

    # -- reading -------------------------------------------------------------------------

    def read(self, entry: SourceEntry) -> bytes:
        """The object's current bytes. SourceError if unreadable; TooLarge over `max_file_mb`."""
        if entry.size > self.max_bytes:
            raise TooLarge(
                f"{entry.external_id}: {entry.size} bytes is over the source's limit of "
                f"{self.max_bytes} bytes (max_file_mb)"
            )
        key = self.key_of(entry)
        described = "acl_from" in entry.metadata  # by describe() in this run, not rebuilt from the store
        etag = entry.fingerprint.rsplit("-", 1)[0] if described else ""
        try:
            reply = self._client.get_object(Bucket=self.bucket, Key=key, **({"IfMatch": etag} if etag else {}))
            body = reply["Body"]
            try:
                data = cast(bytes, body.read())
            finally:
                body.close()
        except ClientError as e:
            if e.response.get("Error", {}).get("Code") in ("PreconditionFailed", "412"):
                raise SourceError(f"s3://{self.bucket}/{key}: rewritten between describe and read; "
                                  "the next sync reads it again") from e
            raise self._fail("read", e, key) from e
        except BotoCoreError as e:
            raise self._fail("read", e, key) from e
        # The ACL decided from head_object must be the one these bytes carry: a metadata-only
        # rewrite keeps the ETag, so If-Match alone cannot tell.
        if described and self._acl_of(_user_metadata(reply))[0] != entry.acl:
            raise SourceError(f"s3://{self.bucket}/{key}: its ACL changed between describe and read; "
                              "the next sync reads it again")
        return data

    # -- sensors -------------------------------------------------------------------------

    def probe(self) -> str:
        """Hash of the (key, ETag, size, LastModified) of every matching object.

        One paginated listing, no per-object requests. LastModified is included so that a
        metadata-only rewrite (an ACL change, which keeps the ETag) changes the probe too.
        """
        h = hashlib.sha256()
        for e in self.list():  # S3 lists keys in UTF-8 binary order: already stable
            h.update(f"{e.external_id}\t{e.fingerprint}\t{e.modified_at:.0f}\n".encode())
        return h.hexdigest()
