"""Gateway API keys: which key a request carries, compared in constant time.

Keys are compared by their SHA-256 digests, so a key given in the config as its
hash (`gateway.config.keyhash`) and one given in clear are matched alike.
"""

from __future__ import annotations

import hmac

from starlette.datastructures import Headers

from gateway.config import KeySettings
from gateway.config.keyhash import digest_of, stored_digest
from gateway.errors import AuthenticationFailed

__all__ = ["Authenticator", "presented_key"]


def presented_key(headers: Headers) -> str | None:
    """The key from `Authorization: Bearer …`, `api-key` or `x-api-key`."""
    authorization = headers.get("authorization")
    if authorization:
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return token.strip()
    return headers.get("api-key") or headers.get("x-api-key")


class Authenticator:
    """Maps a presented key to its `KeySettings`; with no keys configured, all are let in."""

    def __init__(self, keys: list[KeySettings]) -> None:
        self._keys = [(stored_digest(key.key.get_secret_value()), key) for key in keys]

    @property
    def open(self) -> bool:
        return not self._keys

    def check(self, headers: Headers) -> KeySettings | None:
        return self.identify(presented_key(headers))

    def identify(self, presented: str | None) -> KeySettings | None:
        """The key `presented` is (None in open mode); raises `AuthenticationFailed`."""
        if self.open:
            return None
        if presented is None:
            raise AuthenticationFailed("Missing API key: send `Authorization: Bearer <key>`.")
        candidate = digest_of(presented)
        match: KeySettings | None = None
        # Compare against every key, so timing does not reveal which prefix matched.
        for secret, key in self._keys:
            if hmac.compare_digest(candidate, secret):
                match = key
        if match is None:
            raise AuthenticationFailed("Incorrect API key provided.")
        return match
