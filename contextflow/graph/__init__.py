"""The knowledge graph: typed nodes, edges and tags folded from `graph.*` events.

Modules: `model` (vocabulary and validation), `view` (the pure fold), `query` (the query
language), `writes`, `explore` (reads), `compose` (token-budgeted context),
`transfer` (export, import, ingest), `picture` (mermaid and dot), `directives` (the
`<ctx:...>` tags the Stop hook carries out); `projection` (the graph's state in tables), `stored`
(every read: queries of those tables, beside the logs' remaining bytes while they are built). See docs/graph.md.
"""

from contextflow.features import Feature

FEATURE = Feature(
    "graph",
    group="graph",
    table="contextflow.graph.operations",
    projections={"graph-state": "contextflow.graph.projection:PROJECTION"},
    fields="contextflow.graph.fields",
    extractors="contextflow.graph.extract",
    search_version=(1, "cc752132283e291b04e2"),
    commands={"view": "saved graph views"},
)
