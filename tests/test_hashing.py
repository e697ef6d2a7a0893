"""`core/hashing.py` gives the same digests as `hashlib` (ids, keys and file checks already stored depend on them)."""

import hashlib

import pytest

from contextflow.core import hashing

DATA = [b"", b"x", "näive \u2028 text".encode(), bytes(range(256)) * 40]


@pytest.mark.parametrize("data", DATA)
def test_each_digest_is_hashlib_s(data):
    assert hashing.sha256(data).hexdigest() == hashlib.sha256(data).hexdigest()
    assert hashing.sha1(data, usedforsecurity=False).hexdigest() == hashlib.sha1(data).hexdigest()
    assert hashing.shake_256(data).digest(37) == hashlib.shake_256(data).digest(37)
    for options in ({"digest_size": 6}, {"digest_size": 16, "key": b"k" * 32}, {"person": b"contextflow-id"}):
        assert hashing.blake2b(data, **options).digest() == hashlib.blake2b(data, **options).digest()


def test_an_incremental_digest_is_hashlib_s():
    ours, theirs = hashing.sha256(), hashlib.sha256()
    for part in DATA:
        ours.update(part)
        theirs.update(part)
    assert ours.hexdigest() == theirs.hexdigest()
    copied = hashing.blake2b(b"a", digest_size=10).copy()
    copied.update(b"b")
    assert copied.digest() == hashlib.blake2b(b"ab", digest_size=10).digest()


def test_none_is_openssl_s():
    """The point of the module: none of them comes from `_hashlib` (OpenSSL) on a Python that has its own."""
    for function in (hashing.sha256, hashing.sha1, hashing.shake_256, hashing.blake2b):
        assert getattr(function, "__module__", "") != "_hashlib", function
