"""What a conversation record adds to the search index (contextflow.search.extractors)."""

from __future__ import annotations

from contextflow.conversations.view import SAVE_KIND
from contextflow.core.events import Event
from contextflow.core.project import project_of
from contextflow.search.docs import Op, Put
from contextflow.search.extractors import Extractors, lines, list_of, nonempty, text_of, texts_of
from contextflow.sessions.view import session_of


def conversation_docs(event: Event) -> list[Op]:
    """One document per conversation: its enriched text, topics included (the seed's decomposer)."""
    data = event.data
    conversation_id = text_of(data.get("conversation_id"))
    if not conversation_id:
        return []
    parts = [data, *(t for t in data.get("topics") or [] if isinstance(t, dict))]

    def every(name: str) -> list[str]:  # a list field of the record and of each topic
        return [text for part in parts for text in texts_of(part.get(name))]

    decisions = [item for part in parts for item in list_of(part.get("decisions")) if isinstance(item, dict)]
    statements = []
    for item in decisions:
        if statement := text_of(item.get("decision")):
            statements.append(("rejected: " if item.get("status") == "rejected" else "") + statement)
    summaries = [*(part.get("summary") for part in parts), data.get("overall_summary")]
    fields = nonempty(
        title=lines(texts_of([part.get("topic") for part in parts])),
        tags=lines(dict.fromkeys(every("categories"))),
        entities=lines(dict.fromkeys(every("related_entities"))),
        decisions=lines(statements),
        reasoning=lines(texts_of([item.get("reasoning") for item in decisions])),
        open_questions=lines(every("open_questions")),
        summary=lines(texts_of(summaries) + texts_of(data.get("cross_topic_insights"))),
    )
    meta = {"project": project_of(event), "agent": text_of(data.get("source")), "session_id": session_of(event)}
    return [Put(conversation_id, fields, meta)]


EXTRACTORS: Extractors = {SAVE_KIND: ("conversation", conversation_docs)}
