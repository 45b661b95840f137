"""Client keys kept as their hash: `sha256:<64 hex digits>` in place of the key.

A gateway key is a long random token, not a password a person chose, so one
SHA-256 round is enough to keep it unreadable in a config file, a repository or a
backup; a slow password hash would add its cost to every request. The gateway
hashes what a client presents and compares digests, in constant time.
"""

from __future__ import annotations

import hashlib
import re

__all__ = ["HASH_PREFIX", "check_hashed", "digest_of", "hash_key", "is_hashed", "stored_digest"]

HASH_PREFIX = "sha256:"
_HASHED = re.compile(r"sha256:[0-9a-fA-F]{64}")


def hash_key(key: str) -> str:
    """The config entry for `key`: `sha256:` and its hex digest."""
    return HASH_PREFIX + hashlib.sha256(key.encode()).hexdigest()


def is_hashed(value: str) -> bool:
    return value.startswith(HASH_PREFIX)


def check_hashed(value: str) -> str:
    """A `sha256:` entry must hold exactly a digest (a key that merely starts so is refused)."""
    if is_hashed(value) and not _HASHED.fullmatch(value):
        raise ValueError("a hashed key is `sha256:` and 64 hex digits (`bias-gateway hash-key`)")
    return value


def digest_of(presented: str) -> bytes:
    """The digest a presented key is compared by."""
    return hashlib.sha256(presented.encode()).digest()


def stored_digest(value: str) -> bytes:
    """The digest of a configured key, whether it is given in clear or hashed."""
    if is_hashed(value):
        return bytes.fromhex(value[len(HASH_PREFIX) :])
    return digest_of(value)
