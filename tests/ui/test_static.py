"""The page's own files: everything ships in the package, nothing is fetched from elsewhere, no
inline script, and stored text never goes through an HTML parser."""

from __future__ import annotations

import re

from contextflow.adapters.ui.graphview import query_of
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
        if path.is_dir():
            continue
        text = path.read_text().replace(SVG_NAMESPACE, "")
        assert re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}", text) is None, path.name
        assert "@import" not in text and "url(" not in text, path.name


def test_the_graph_library_ships_with_its_licence_and_fetches_nothing() -> None:
    vendor = STATIC / "vendor"
    assert sorted(p.name for p in vendor.iterdir()) == ["cytoscape.LICENSE.txt", "cytoscape.esm.min.js"]
    assert "Permission is hereby granted, free of charge" in (vendor / "cytoscape.LICENSE.txt").read_text()
    code = (vendor / "cytoscape.esm.min.js").read_text()
    assert 'version="3.35.0"' in code  # the version MAINTAINERS.md names
    for sink in ("fetch(", "XMLHttpRequest", "WebSocket", "importScripts", "eval(", "new Function", "innerHTML"):
        assert sink not in code, sink
    assert 'from "./vendor/cytoscape.esm.min.js"' in (STATIC / "graphdraw.js").read_text()


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


def test_no_empty_list_says_none_while_the_views_are_built() -> None:
    """ "No threads yet." from a build that has not read them is a lie: every empty-state text goes through
    app.js's `none`, which says what is not read yet while this machine builds its views."""
    bare = re.compile(r'h\("(?:p|h2|h3)", \{[^}]*\}, "(?:No |Nothing )(?!: the hook)')
    for script in STATIC.glob("*.js"):
        found = bare.findall(script.read_text())
        assert found == [], (script.name, found)
    graph = (STATIC / "graph.js").read_text()
    assert 'none("No node holds' in graph
    app = (STATIC / "app.js").read_text()
    assert "export function none(text)" in app and "await knowBuilding();" in app
