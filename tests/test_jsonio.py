"""`jsonio.loads` accepts and refuses what orjson does, whichever library parses (core/jsonio.py)."""

from __future__ import annotations

import json
import random
import subprocess
import sys
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contextflow.core import jsonio

TRICKY = [
    b"NaN",
    b"[Infinity]",
    b"-Infinity",
    b"1e400",
    b"-1e400",
    b"1.7976931348623157e309",
    b"0.1e-400",
    b"18446744073709551615",
    b"18446744073709551616",
    b"-9223372036854775808",
    b"-9223372036854775809",
    b"123456789012345678901234567890",
    b'"\\ud800"',
    b'"\\udc00x"',
    b'{"\\ud800": 1}',
    b'"\\ud83d\\ude00"',
    b'"\\\\ud800"',
    b"\xef\xbb\xbf{}",
    b'{"a":1,"a":2}',
    b" {} ",
    b'"\xff"',
    b'"\xed\xa0\x80"',
    b'"a\x01"',
    b"-0",
    b"-0.0",
    b"1E2",
    b'"\\u0000"',
    b"",
    b'{"a":1}x',
    b'"\\/"',
    b"[1,]",
    b"01",
    b'{"a" 1}',
    b"[" * 120 + b"]" * 120,
    b"[" * 2000 + b"]" * 2000,
    "é".encode(),
    '"é\u2028"'.encode(),
]


def both(data: bytes | str) -> tuple[Any, Any]:
    """What orjson and the standard-library path each give: a value, or the error type."""

    def run(parse: Any) -> Any:
        try:
            return ("value", repr(parse(data)))
        except jsonio.DecodeError:
            return ("refused", None)

    return run(orjson.loads), run(_stdlib_loads)


def _stdlib_loads(data: bytes | str) -> Any:
    saved = sys.modules.pop("orjson")
    try:
        return jsonio.loads(data)
    finally:
        sys.modules["orjson"] = saved


@pytest.mark.parametrize("data", TRICKY, ids=range(len(TRICKY)))
def test_tricky_texts_are_read_alike(data: bytes) -> None:
    fast, standard = both(data)
    assert fast == standard
    text = data.decode("utf-8", "surrogateescape")  # (a str, as a caller may pass one)
    fast, standard = both(text)
    assert fast == standard


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(json_values)
def test_any_document_reads_alike(value: Any) -> None:
    text = json.dumps(value)  # (ASCII: every non-ASCII character escaped, surrogate pairs too)
    assert both(text.encode()) == both(json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass"))
    fast, standard = both(text.encode())
    assert fast == standard


def test_damaged_documents_are_refused_alike() -> None:
    rng = random.Random(7)
    seeds = [b'{"k":"note","data":{"text":"caf\\u00e9 \\ud83d\\ude00","n":[1,2.5,-3e2,true,null]}}', b'[1, "a", {}]']
    alphabet = b'{}[]",:\\u0123456789abcdefeE+-.tnrl \xff\xed\xa0\x80'
    for _ in range(3000):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            spot = rng.randrange(len(data))
            choice = rng.random()
            if choice < 0.4:
                data[spot] = rng.choice(alphabet)
            elif choice < 0.7:
                del data[spot]
            else:
                data.insert(spot, rng.choice(alphabet))
        fast, standard = both(bytes(data))
        assert fast == standard, bytes(data)


written_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats()
    | st.text()
    | st.characters(max_codepoint=0x20),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.tuples(inner)
        | st.dictionaries(st.text(max_size=8) | st.integers(0, 3), inner, max_size=4)
    ),
    max_leaves=20,
)


def orjson_writes(value: Any, indent: bool, sort_keys: bool) -> bytes | str:
    option = (orjson.OPT_INDENT_2 if indent else 0) | (orjson.OPT_SORT_KEYS if sort_keys else 0)
    try:
        return orjson.dumps(value, option=option)
    except TypeError as exc:
        return type(exc).__name__


@settings(max_examples=400, deadline=None)
@given(written_values, st.booleans(), st.booleans())
def test_a_value_json_writes_is_written_in_orjsons_exact_bytes(value: Any, indent: bool, sort_keys: bool) -> None:
    """Before orjson is loaded `dumps` writes plain values with `json`: the bytes must be orjson's, and
    whatever `json` cannot write alike (floats, tuples, big integers, surrogates, int keys) is left to orjson."""
    if jsonio._plain(value, 0):
        assert jsonio._written(value, indent, sort_keys) == orjson_writes(value, indent, sort_keys)
    else:  # (and inside any container too)
        for wrapped in ({"v": value}, [value]):
            assert not jsonio._plain(wrapped, 0)


@pytest.mark.parametrize(
    "value",
    [1.5, (1,), 2**64, -(2**63) - 1, "\ud800", {1: "a"}, {"\udfff": 1}, [float("nan")], 1.0, {"a": (1, 2)}],
)
def test_values_json_would_write_differently_are_left_to_orjson(value: Any) -> None:
    assert not jsonio._plain(value, 0)


def test_nesting_orjson_refuses_is_never_written_by_json() -> None:
    value: Any = []
    for _ in range(300):
        value = [value]
    assert not jsonio._plain(value, 0)
    with pytest.raises(TypeError):
        orjson.dumps(value)
    shallow: Any = []
    for _ in range(253):
        shallow = [shallow]
    assert jsonio._plain(shallow, 0) and jsonio._written(shallow, False, False) == orjson.dumps(shallow)


def test_a_hook_writes_without_orjson_until_a_value_needs_it() -> None:
    script = (
        "import sys; from contextflow.core import jsonio; "
        "print(jsonio.dumps({'k': ['é', 1, None, True]}).decode(), 'orjson' in sys.modules); "
        "print(jsonio.dumps({'f': 1.5}).decode(), 'orjson' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ['{"k":["é",1,null,true]}', "False", '{"f":1.5}', "True"]


def test_a_hook_process_reads_without_orjson(tmp_path: Any) -> None:
    script = "import sys; from contextflow.core import jsonio; print(jsonio.loads(b'[1]'), 'orjson' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["[1]", "False"]
    script = "import sys; from contextflow.core import jsonio; jsonio.fast(); print('orjson' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    assert done.stdout.split() == ["True"]


def test_only_jsonio_imports_orjson() -> None:
    """One module owns JSON: any other importing orjson would load it into every hook again."""
    import ast
    from pathlib import Path

    package = Path(jsonio.__file__).parent.parent
    importers = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(name.split(".")[0] == "orjson" for name in names):
                importers.append(str(path.relative_to(package)))
    assert sorted(set(importers)) == ["core/jsonio.py"]
