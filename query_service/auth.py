"""Who is asking: the principals of a query service request, from a verified credential.

Two modes (`query.auth.mode`):

- ``credentials`` (default): the caller presents an API key (``X-API-Key: KEY`` or
  ``Authorization: Bearer KEY``) or a JWT (``Authorization: Bearer <jwt>``). API keys are
  configured as SHA-256 hashes with the principals they stand for (``bindery hash-key`` prints
  one); JWTs are verified with PyJWT against an HS256 secret read from the environment variable
  the configuration names, or against the RS256 public keys of a JWKS file, and their
  principals come from a configured claim. No valid credential: `Unauthorized` (HTTP 401).
- ``trusted-principal``: the request body's ``principal`` is believed as is. Only for a
  deployment behind a gateway that authenticates callers and sets it.

API keys are random and long, so one SHA-256 is the right hash (a slow password hash would add
nothing but latency); the comparison runs over every configured hash in constant time.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import secrets
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jwt

from connectors.config import QueryAuthConfig
from connectors.errors import BinderyError, ConfigError

__all__ = ["Authenticator", "Unauthorized", "hash_key", "new_key"]

_ENV_NAME = re.compile(r"[A-Z_][A-Z0-9_]*")  # how environment variables are named, by convention

_HASH_PREFIX = "sha256:"


class Unauthorized(BinderyError):
    """No valid credential (HTTP 401)."""

    reason = "unauthorized"


def hash_key(key: str) -> str:
    """The form an API key is configured in: ``sha256:<hex>``."""
    return _HASH_PREFIX + hashlib.sha256(key.encode("utf-8")).hexdigest()


def new_key() -> str:
    """A fresh random API key (256 bits, URL-safe)."""
    return "bk_" + secrets.token_urlsafe(32)


def _looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2 and all(token.split("."))


def _claim(claims: Mapping[str, Any], path: str) -> Any:
    value: Any = claims
    for part in path.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


def _as_principals(value: Any) -> tuple[str, ...]:
    """A claim value as principals: a list of strings, or one comma/space-separated string."""
    if value is None:
        return ()
    items = value.replace(",", " ").split() if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(p, str) for p in items):
        raise Unauthorized("the token's principals claim is not a string or a list of strings")
    return tuple(dict.fromkeys(p.strip() for p in items if p.strip()))


def auth_warnings(cfg: QueryAuthConfig) -> list[str]:
    """What to tell the operator starting the service about its credentials, one line each."""
    return [w for w in (no_credentials_warning(cfg), bare_subject_warning(cfg)) if w]


def bare_subject_warning(cfg: QueryAuthConfig) -> str | None:
    """A token's subject taken as a principal as it is: a subject that reads like a group (or an
    operator's name) is that group, for whoever the identity provider lets pick such a name."""
    if cfg.mode != "credentials" or not cfg.jwt.enabled or not cfg.jwt.include_subject or cfg.jwt.subject_prefix:
        return None
    also = f" or an operator ({', '.join(cfg.operators)})" if cfg.operators else ""
    return ("warning: query.auth.jwt.include_subject with an empty subject_prefix: a token whose `sub` is the "
            f"name of a group in an ACL{also} is that group; set subject_prefix (\"user:\") unless subjects "
            "and group names can never meet")


def no_credentials_warning(cfg: QueryAuthConfig) -> str | None:
    """What to tell the operator starting a service that can admit nobody: credentials mode
    with neither an API key nor JWT configured answers every search 401."""
    if cfg.mode != "credentials" or cfg.api_keys or cfg.jwt.enabled:
        return None
    return ("warning: query.auth configures no API key and no JWT, so every /search will answer 401: "
            "add a key (`bindery hash-key --new` prints one and its hash for query.auth.api_keys) "
            "or set up query.auth.jwt")


MIN_HS256_SECRET_BYTES = 32  # 256 bits, the length of HS256's hash


class Authenticator:
    """Resolves credentials to principals for one configuration. Secrets are read once, at
    construction: a missing environment variable or JWKS file is a `ConfigError` at startup,
    never a surprise on the first request."""

    def __init__(self, cfg: QueryAuthConfig, environ: Mapping[str, str] | None = None):
        self.cfg = cfg
        env = os.environ if environ is None else environ
        self._keys = [(k.hash, tuple(k.principals), k.name) for k in cfg.api_keys]
        self._hs_secret: str | None = None
        self._jwks: jwt.PyJWKSet | None = None
        j = cfg.jwt
        if j.hs256_secret_env:
            secret = env.get(j.hs256_secret_env)
            if not secret:
                # the name, where it looks like one; a value that does not may be the secret itself
                name = j.hs256_secret_env
                raise ConfigError("query.auth.jwt.hs256_secret_env: " + (
                    f"the environment variable {name} is not set" if _ENV_NAME.fullmatch(name) else
                    "the environment variable it names is not set (the value is not shown: it does not look like "
                    "a variable name; was the secret itself pasted there?)"))
            if len(secret.encode("utf-8")) < MIN_HS256_SECRET_BYTES:
                # RFC 7518 3.2: a key at least as long as the hash; anyone holding one token can
                # try short secrets offline and then sign tokens naming any group
                raise ConfigError(f"query.auth.jwt.hs256_secret_env: the secret in {j.hs256_secret_env} is "
                                  f"{len(secret.encode('utf-8'))} bytes; HS256 needs at least {MIN_HS256_SECRET_BYTES} "
                                  "(e.g. `openssl rand -base64 48`)")
            self._hs_secret = secret
        if j.jwks_file:
            try:
                self._jwks = jwt.PyJWKSet.from_json(Path(j.jwks_file).read_text())
            except (OSError, ValueError, jwt.PyJWTError) as e:
                raise ConfigError(f"query.auth.jwt.jwks_file: cannot load {j.jwks_file}: {e}") from None

    @property
    def trusted_principal(self) -> bool:
        return self.cfg.mode == "trusted-principal"

    def principals(self, authorization: str | None, api_key: str | None) -> tuple[str, ...]:
        """The caller's principals, from an ``Authorization`` header value or an API key. A
        request carrying both is refused: which one counts would be this service's choice, and a
        gateway that checked only one of them would pass a request acting as the other."""
        if authorization is not None and api_key is not None:  # an empty one too: a proxy sees two
            raise Unauthorized("send one credential: an X-API-Key header or an Authorization header, not both")
        bearer = None
        if authorization:
            scheme, _, token = authorization.strip().partition(" ")
            if scheme.lower() != "bearer" or not token.strip():
                raise Unauthorized("the Authorization header must be 'Bearer <token>'")
            bearer = token.strip()
        if bearer and _looks_like_jwt(bearer) and self.cfg.jwt.enabled:
            return self._from_jwt(bearer)
        key = api_key or bearer
        if not key:
            raise Unauthorized("a credential is required: an API key (X-API-Key) or a bearer token")
        return self._from_key(key)

    def _from_key(self, key: str) -> tuple[str, ...]:
        presented = hash_key(key).encode()
        found: tuple[str, ...] | None = None
        for stored, principals, _name in self._keys:  # no early exit: constant time per key
            if hmac.compare_digest(presented, stored.encode()):
                found = principals
        if found is None:
            raise Unauthorized("invalid credential")
        return found

    def _from_jwt(self, token: str) -> tuple[str, ...]:
        j = self.cfg.jwt
        try:
            header = jwt.get_unverified_header(token)
            alg = header.get("alg")
            if alg == "HS256" and self._hs_secret is not None:
                key: Any = self._hs_secret
            elif alg == "RS256" and self._jwks is not None:
                key = self._jwks_key(header.get("kid"))
            else:
                raise Unauthorized(f"token algorithm {alg!r} is not accepted here")
            claims = jwt.decode(token, key, algorithms=[alg], audience=j.audience, issuer=j.issuer,
                                leeway=j.leeway_seconds, options={"require": ["exp"]})
        except jwt.PyJWTError as e:
            raise Unauthorized(f"invalid token: {e}") from None
        # RFC 7519: NumericDate claims are JSON numbers; PyJWT takes a string of digits too
        for name in ("exp", "nbf", "iat"):
            if name in claims and (isinstance(claims[name], bool) or not isinstance(claims[name], (int, float))):
                raise Unauthorized(f"invalid token: the {name} claim must be a number (seconds since the epoch)")
        principals = _as_principals(_claim(claims, j.principals_claim))
        if j.include_subject and isinstance(claims.get("sub"), str) and claims["sub"]:
            principals = tuple(dict.fromkeys((j.subject_prefix + claims["sub"], *principals)))
        return principals

    def _jwks_key(self, kid: str | None) -> Any:
        assert self._jwks is not None
        keys = [k for k in self._jwks.keys if kid is None or k.key_id == kid]
        if kid is None and len(keys) != 1:
            raise Unauthorized("the token names no key id (kid) and the JWKS holds several keys")
        if not keys:
            raise Unauthorized(f"no key {kid!r} in the configured JWKS")
        return keys[0].key


def jwks_of_public_key(public_pem: bytes, kid: str) -> str:
    """A JWKS document for one RSA public key (for operators and tests)."""
    from cryptography.hazmat.primitives.asymmetric.rsa import RSAPublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    key = load_pem_public_key(public_pem)
    if not isinstance(key, RSAPublicKey):
        raise ConfigError("an RS256 JWKS needs an RSA public key")
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key))
    return json.dumps({"keys": [{**jwk, "kid": kid, "use": "sig", "alg": "RS256"}]})
