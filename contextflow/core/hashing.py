"""The hash functions contextflow uses, from Python's own implementations.

`hashlib` loads OpenSSL first (about 2 ms of every hook call, which needs nothing of it), so these
come from the interpreter's built-in modules, as `random` takes its sha512 from `_sha512`: the same
algorithms and digests, and `hashlib`'s own where a Python is built without them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hashlib import blake2b, sha1, sha256, shake_256
else:
    try:
        from _blake2 import blake2b
        from _sha1 import sha1
        from _sha3 import shake_256

        try:
            from _sha2 import sha256
        except ImportError:  # (Python 3.11)
            from _sha256 import sha256
    except ImportError:  # a Python built without them
        from hashlib import blake2b, sha1, sha256, shake_256

__all__ = ["blake2b", "sha1", "sha256", "shake_256"]
