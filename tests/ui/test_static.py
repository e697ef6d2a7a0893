"""The page's own files: everything ships in the package, nothing is fetched from elsewhere, no
inline script, and stored text never goes through an HTML parser."""

from __future__ import annotations

import re

from contextflow.adapters.ui.graphview import layout, query_of
from contextflow.adapters.ui.server import STATIC

SVG_NAMESPACE = "http://www.w3.org/2000/svg"


def test_every_asset_the_page_loads_is_in_the_package() -> None:
    html = (STATIC / "index.html").read_text()
    loaded = re.findall(r'(?:src|href)="(/static/[^"]+)"', html)
    assert sorted(loaded) == ["/static/app.css", "/static/app.js"]
    for script in STATIC.glob("*.js"):
        for module in re.findall(r'from "\./([^"]+)"', script.read_text()):
            assert (STATIC / module).is_file(), (script.name, module)
    assert all((STATIC / path.removeprefix("/static/")).is_file() for path in loaded)


def test_nothing_is_fetched_from_elsewhere_and_no_script_is_inline() -> None:
    html = (STATIC / "index.html").read_text()
    assert re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html) is None  # every script has a src
    assert re.search(r"\son[a-z]+=", html) is None  # no inline event handlers
    for path in STATIC.iterdir():
        text = path.read_text().replace(SVG_NAMESPACE, "")
        assert re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text) is None, path.name
        assert "@import" not in text and "url(" not in text.replace("url(#arrow)", ""), path.name


def test_the_scripts_never_parse_text_as_html() -> None:
    for path in STATIC.glob("*.js"):
        code = re.sub(r"//[^\n]*", "", path.read_text())  # without comments
        for sink in (
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "document.write",
            "eval(",
            "new Function",
            'setAttribute("on',
            "srcdoc",
        ):
            assert sink not in code, (path.name, sink)


def test_filters_become_one_graph_query_and_bad_ones_are_refused() -> None:
    assert query_of("auth", "decision", "project:shop", "pinned") == (
        "(auth) AND type:decision AND tag:project:shop AND tag:tier:pinned"
    )
    assert query_of("", "", "", "") == ""
    for bad in (("", "nonsense", "", ""), ("", "", "a b", ""), ("", "", "x) OR (y", ""), ("", "", "", "gold")):
        try:
            query_of(*bad)
        except Exception as exc:
            assert "must be one of" in str(exc) or "no spaces" in str(exc)
        else:
            raise AssertionError(bad)


def test_the_layout_is_deterministic_and_inside_the_picture() -> None:
    nodes = [{"id": f"n{i:02d}", "type": ("fact", "decision", "task")[i % 3]} for i in range(40)]
    edges = [{"from": f"n{i:02d}", "to": f"n{(i * 7) % 40:02d}"} for i in range(40)]
    first = layout(nodes, edges)
    assert first == layout(list(reversed(nodes)), edges)
    assert set(first) == {n["id"] for n in nodes}
    assert all(40 <= x <= 960 and 40 <= y <= 660 for x, y in first.values())
    assert layout([], []) == {} and layout(nodes[:1], []) == {"n00": [500.0, 350.0]}
