"""The knowledge graph: typed nodes, edges and tags folded from `graph.*` events.

Modules: `model` (vocabulary and validation), `view` (the pure fold), `query` (the query
language), `ops` (writes), `explore` (reads), `compose` (token-budgeted context),
`transfer` (export, import, ingest), `picture` (mermaid and dot), `directives` (the
`<ctx:...>` tags the Stop hook carries out). See docs/graph.md.
"""
