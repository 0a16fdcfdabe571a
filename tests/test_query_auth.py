"""Query service authentication: the principals come from a verified credential (an API key
stored hashed, or a JWT checked against an HS256 secret from the environment or an RS256 JWKS
file); nothing without one. The body's `principal` is believed only in trusted-principal mode.

These run the real app over an empty data dir (no binding yet: an authenticated search is a
503, an unauthenticated one a 401 before anything else), so no model is loaded. What the
principals then see is tested end to end in test_query_service.py.
"""

from __future__ import annotations

import contextlib
import io
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi.testclient import TestClient

from connectors.config import QueryAuthConfig, config_from_dict
from connectors.errors import ConfigError
from connectors.store import DocumentStore
from orchestration.cli import main
from query_service.app import create_app
from query_service.auth import Authenticator, Unauthorized, hash_key, jwks_of_public_key

KEY = "bk_test-key-for-alice"
SECRET = "a-long-hs256-secret-for-tests-only-0123456789"
BODY = {"query": "battery", "k": 3}


def _cfg(tmp_path: Path, auth: dict[str, Any]) -> Any:
    cfg = config_from_dict({"data_dir": str(tmp_path / "data"), "query": {"auth": auth}})
    DocumentStore(cfg.database_url).dispose()  # an empty, migrated store: no binding yet
    return cfg


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestClient]:
    monkeypatch.setenv("BINDERY_TEST_JWT", SECRET)
    cfg = _cfg(tmp_path, {"api_keys": [{"name": "alice", "hash": hash_key(KEY), "principals": ["alice"]}],
                          "jwt": {"hs256_secret_env": "BINDERY_TEST_JWT"}})
    with TestClient(create_app(cfg)) as c:
        yield c


def _token(claims: dict[str, Any], key: Any = SECRET, alg: str = "HS256", **headers: Any) -> str:
    return jwt.encode({"exp": time.time() + 60, **claims}, key, algorithm=alg, headers=headers or None)


def test_no_credential_is_401_whatever_principal_the_body_claims(client: TestClient) -> None:
    r = client.post("/search", json={**BODY, "principal": "hr-team"})
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert "hits" not in r.json()
    assert r.json()["error"] == "unauthorized" and r.json()["detail"]  # the shape of every error body
    assert client.post("/search", json=BODY).status_code == 401
    # a console page's calls without a key are not refused searches (a new-user review: every
    # console load without a key added 3 to the alerting counter)
    assert client.get("/console/api/generations").status_code == 401
    assert 'bindery_search_errors_total{reason="unauthorized"} 2.0' in client.get("/metrics").text


@pytest.mark.parametrize("headers", [
    {"X-API-Key": "bk_wrong"},
    {"Authorization": "Bearer bk_wrong"},
    {"Authorization": f"Basic {KEY}"},
    {"Authorization": "Bearer"},
    {"Authorization": "Bearer a.b.c"},  # not a JWT at all
])
def test_invalid_credentials_are_401(client: TestClient, headers: dict[str, str]) -> None:
    assert client.post("/search", json=BODY, headers=headers).status_code == 401


@pytest.mark.parametrize("headers", [{"X-API-Key": KEY}, {"Authorization": f"Bearer {KEY}"}])
def test_a_valid_api_key_passes(client: TestClient, headers: dict[str, str]) -> None:
    r = client.post("/search", json=BODY, headers=headers)
    assert r.status_code == 503 and "binding" in r.json()["detail"]  # authenticated; nothing indexed yet


def test_the_body_cannot_name_a_principal_in_credentials_mode(client: TestClient) -> None:
    r = client.post("/search", json={**BODY, "principal": "hr-team"}, headers={"X-API-Key": KEY})
    assert r.status_code == 400 and "trusted-principal" in r.json()["detail"]


def test_time_claims_must_be_numbers(client: TestClient) -> None:
    """RFC 7519's NumericDate: an `exp` of "<digits>" was accepted (PyJWT converts it)."""
    for claims in ({"exp": str(int(time.time()) + 60)}, {"nbf": "0"}, {"iat": True}):
        r = client.post("/search", json=BODY, headers={"Authorization": f"Bearer {_token({'sub': 'bob', **claims})}"})
        assert r.status_code == 401 and "must be a number" in r.json()["detail"], claims
    ok = client.post("/search", json=BODY, headers={"Authorization": f"Bearer {_token({'sub': 'bob', 'iat': 1})}"})
    assert ok.status_code == 503


def test_a_request_carries_one_credential_once(client: TestClient) -> None:
    """Two credentials (a key and a bearer token, or one header twice) are refused, valid or
    not: which of them counted was this service's choice, so a gateway that vetted one header
    passed requests acting as the other (an attacker review: X-API-Key silently won)."""
    token = _token({"sub": "bob"})
    both = client.post("/search", json=BODY, headers={"X-API-Key": KEY, "Authorization": f"Bearer {token}"})
    assert both.status_code == 401 and "not both" in both.json()["detail"]
    empty = client.post("/search", json=BODY, headers={"X-API-Key": "", "Authorization": f"Bearer {KEY}"})
    assert empty.status_code == 401 and "not both" in empty.json()["detail"]  # a proxy sees two headers
    twice = client.post("/search", json=BODY, headers=[("X-API-Key", "bk_wrong"), ("X-API-Key", KEY)])
    assert twice.status_code == 401 and "2 times" in twice.json()["detail"]
    assert client.post("/search", json=BODY, headers={"X-API-Key": KEY}).status_code == 503  # one, once: in


def test_hs256_tokens(client: TestClient) -> None:
    def status(token: str) -> int:
        return client.post("/search", json=BODY, headers={"Authorization": f"Bearer {token}"}).status_code

    assert status(_token({"groups": ["hr-team"]})) == 503
    assert status(_token({"groups": ["hr-team"], "exp": time.time() - 3600})) == 401  # expired
    assert status(_token({"groups": ["hr-team"]}, key="another-secret-of-enough-length-0123456")) == 401
    no_exp = jwt.encode({"groups": ["hr-team"]}, SECRET, algorithm="HS256")
    assert status(no_exp) == 401
    unsigned = jwt.encode({"groups": ["hr-team"], "exp": time.time() + 60}, "", algorithm="none")  # "": no key
    assert status(unsigned) == 401


def test_rs256_tokens_from_a_jwks_file(tmp_path: Path) -> None:
    priv = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pub_pem = priv.public_key().public_bytes(serialization.Encoding.PEM,
                                             serialization.PublicFormat.SubjectPublicKeyInfo)
    (tmp_path / "jwks.json").write_text(jwks_of_public_key(pub_pem, "k1"))
    auth = Authenticator(QueryAuthConfig.model_validate(
        {"jwt": {"jwks_file": str(tmp_path / "jwks.json"), "principals_claim": "realm.roles",
                 "include_subject": True, "audience": "bindery"}}))
    good = _token({"sub": "u-1", "realm": {"roles": ["eng", "eng"]}, "aud": "bindery"}, priv, "RS256", kid="k1")
    assert auth.principals(f"Bearer {good}", None) == ("u-1", "eng")
    prefixed = Authenticator(QueryAuthConfig.model_validate(
        {"jwt": {"jwks_file": str(tmp_path / "jwks.json"), "principals_claim": "realm.roles",
                 "include_subject": True, "subject_prefix": "user:", "audience": "bindery"}}))
    named_like_a_group = _token({"sub": "eng", "realm": {"roles": []}, "aud": "bindery"}, priv, "RS256", kid="k1")
    assert prefixed.principals(f"Bearer {named_like_a_group}", None) == ("user:eng",)  # not the group eng
    with pytest.raises(ValueError, match="subject_prefix is set but include_subject is false"):
        QueryAuthConfig.model_validate({"jwt": {"jwks_file": "k.json", "subject_prefix": "user:"}})
    with pytest.raises(Unauthorized):  # another audience
        auth.principals(f"Bearer {_token({'aud': 'other'}, priv, 'RS256', kid='k1')}", None)
    with pytest.raises(Unauthorized):  # unknown key id
        auth.principals(f"Bearer {_token({'aud': 'bindery'}, priv, 'RS256', kid='k2')}", None)
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(Unauthorized):  # signed by someone else
        auth.principals(f"Bearer {_token({'aud': 'bindery'}, other, 'RS256', kid='k1')}", None)
    with pytest.raises(Unauthorized):  # HS256 "signed" with the public key: algorithm confusion
        auth.principals(f"Bearer {_hs_with(pub_pem)}", None)


def _hs_with(key: bytes) -> str:
    """An HS256 token whose HMAC key is `key` (bypasses PyJWT's refusal to use a PEM as a secret)."""
    import base64
    import hashlib
    import hmac

    def b64(b: bytes) -> str:
        return base64.urlsafe_b64encode(b).rstrip(b"=").decode()

    head = b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}).encode())
    body = b64(json.dumps({"aud": "bindery", "exp": time.time() + 60}).encode())
    sig = hmac.new(key, f"{head}.{body}".encode(), hashlib.sha256).digest()
    return f"{head}.{body}.{b64(sig)}"


@pytest.mark.parametrize("claim,expected", [
    (["a", "b", "a"], ("a", "b")),
    ("a b,c", ("a", "b", "c")),
    (None, ()),
])
def test_principals_claim_shapes(claim: Any, expected: tuple[str, ...]) -> None:
    auth = Authenticator(QueryAuthConfig.model_validate({"jwt": {"hs256_secret_env": "S"}}), environ={"S": SECRET})
    claims = {} if claim is None else {"groups": claim}
    assert auth.principals(f"Bearer {_token(claims)}", None) == expected


def test_a_malformed_principals_claim_is_401() -> None:
    auth = Authenticator(QueryAuthConfig.model_validate({"jwt": {"hs256_secret_env": "S"}}), environ={"S": SECRET})
    with pytest.raises(Unauthorized):
        auth.principals(f"Bearer {_token({'groups': [1, 2]})}", None)


def test_secrets_must_exist_at_startup(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="BINDERY_MISSING"):
        create_app(_cfg(tmp_path, {"jwt": {"hs256_secret_env": "BINDERY_MISSING"}}))
    with pytest.raises(ConfigError, match="jwks_file"):
        create_app(_cfg(tmp_path, {"jwt": {"jwks_file": str(tmp_path / "none.json")}}))
    # the secret itself pasted where its variable's name belongs is not echoed to the logs
    with pytest.raises(ConfigError, match="was the secret itself pasted") as e:
        create_app(_cfg(tmp_path, {"jwt": {"hs256_secret_env": "s3cr3t-Xq9!vL"}}))
    assert "s3cr3t" not in str(e.value)


def test_a_short_hs256_secret_is_refused_at_startup() -> None:
    """A short secret is guessed offline from any one token, and then any group can be signed
    (an attacker pass: a 3-byte secret was taken)."""
    cfg = QueryAuthConfig.model_validate({"jwt": {"hs256_secret_env": "S"}})
    with pytest.raises(ConfigError, match="is 3 bytes; HS256 needs at least 32") as e:
        Authenticator(cfg, environ={"S": "abc"})
    assert "abc" not in str(e.value)
    Authenticator(cfg, environ={"S": "x" * 32})


def test_secrets_never_come_from_the_yaml(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="hs256_secret"):
        _cfg(tmp_path, {"jwt": {"hs256_secret": SECRET}})
    with pytest.raises(ConfigError, match="hash"):
        _cfg(tmp_path, {"api_keys": [{"hash": KEY, "principals": ["alice"]}]})  # a plain key is refused


def test_trusted_principal_mode_believes_the_body(tmp_path: Path) -> None:
    with TestClient(create_app(_cfg(tmp_path, {"mode": "trusted-principal"}))) as c:
        assert c.post("/search", json={**BODY, "principal": "hr-team"}).status_code == 503  # no binding yet
        r = c.post("/search", json=BODY)
        assert r.status_code == 400 and "principal" in r.json()["detail"]


def test_bindery_hash_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.stdin", io.StringIO("my-secret-key\n"))
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["--json", "hash-key"]) == 0
    assert json.loads(buf.getvalue()) == {"hash": hash_key("my-secret-key")}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["--json", "hash-key", "--new"]) == 0
    out = json.loads(buf.getvalue())
    assert out["hash"] == hash_key(out["key"]) and len(out["key"]) > 40


def test_an_oversized_body_is_413_before_it_is_parsed(client: TestClient) -> None:
    big = json.dumps({**BODY, "query": "x" * 70_000}).encode()
    r = client.post("/search", content=big, headers={"content-type": "application/json", "X-API-Key": KEY})
    assert r.status_code == 413 and "65536" in r.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it streams in
        for _ in range(100):
            yield b"x" * 1024

    r = client.post("/search", content=chunks(), headers={"content-type": "application/json", "X-API-Key": KEY})
    assert r.status_code == 413
    ok = client.post("/search", json={**BODY, "query": "y" * 3000}, headers={"X-API-Key": KEY})
    assert ok.status_code == 503  # under the limit: parsed, authenticated, no binding yet


def test_serving_with_no_way_to_authenticate_warns_the_operator() -> None:
    """Credentials mode with no API key and no JWT admits nobody: `bindery serve` says so at
    start instead of answering every search 401 unexplained."""
    from connectors.config import QueryAuthConfig
    from query_service.auth import no_credentials_warning

    warning = no_credentials_warning(QueryAuthConfig())
    assert warning is not None and "every /search will answer 401" in warning and "hash-key --new" in warning
    assert no_credentials_warning(QueryAuthConfig(api_keys=[{"name": "k", "hash": "sha256:" + "0" * 64,
                                                             "principals": ["public"]}])) is None
    assert no_credentials_warning(QueryAuthConfig(jwt={"jwks_file": "/x.json"})) is None
    assert no_credentials_warning(QueryAuthConfig(mode="trusted-principal")) is None


def test_a_subject_taken_as_a_principal_with_no_prefix_is_warned_about_at_start() -> None:
    """Found by a security re-test: with include_subject and subject_prefix "" a token whose `sub`
    is `ops-team` was admitted to the console's operator views, one whose `sub` is `group:hr` read
    HR's documents. Documented, but nothing said so when the service started."""
    from connectors.config import QueryAuthConfig
    from query_service.auth import auth_warnings

    bare = QueryAuthConfig(api_keys=[], jwt={"jwks_file": "/x.json", "include_subject": True}, operators=["ops-team"])
    (warning,) = auth_warnings(bare)
    assert "empty subject_prefix" in warning and "ops-team" in warning
    prefixed = QueryAuthConfig(jwt={"jwks_file": "/x.json", "include_subject": True, "subject_prefix": "user:"})
    assert auth_warnings(prefixed) == []
    assert auth_warnings(QueryAuthConfig(jwt={"jwks_file": "/x.json"})) == []
