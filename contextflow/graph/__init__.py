"""The knowledge graph: typed nodes, edges and tags folded from `graph.*` events.

Modules: `model` (vocabulary and validation), `view` (the pure fold), `query` (the query
language), `writes`, `explore` (reads), `compose` (token-budgeted context),
`transfer` (export, import, ingest), `picture` (mermaid and dot), `directives` (the
`<ctx:...>` tags the Stop hook carries out); on disk: `table` (the graph's state in tables),
`stored` (reads of them), `reading` (what reads of either see). See docs/graph.md.
"""

from contextflow.features import Feature

FEATURE = Feature(
    "graph",
    group="graph",
    table="contextflow.graph.operations",
    views={"graph": "contextflow.graph.view:GraphView"},
    fields="contextflow.graph.fields",
    extractors="contextflow.graph.extract",
    search_version=(1, "0a6083a5e7a077051317"),
    commands={"view": "saved graph views"},
)
