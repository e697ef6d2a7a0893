"""The get_context reply: the retrieval's markdown (hit blocks: `hits.py`) and its facts as data."""

from __future__ import annotations

from contextflow.app import App
from contextflow.operations.spec import JSON, Reply, given


def get_context(app: App, args: JSON) -> Reply:
    from contextflow.search import retrieval  # imports the index: only a search pays

    result = retrieval.get_context(
        app, query=args["query"], **given(args, "project", "kinds", "limit", "budget_tokens")
    )
    return Reply(result.text, {**result.as_dict(), "markdown": result.text})
