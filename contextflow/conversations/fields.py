"""The shape of every field of a saved conversation (core/fields.py checks them as lines are read), and
the limits its table and its core both use (this module stays light: the table imports it)."""

from contextflow.core.fields import INT, STR, STRS, Shape, listof, record

LIST_LIMIT, DEFAULT_LIST = (1, 200), 20  # `conversations list --limit`: lowest, highest; default

_DECISIONS = listof(record({"decision": STR, "reasoning": STR, "status": STR}))
_TOPIC: dict[str, Shape] = {
    "topic": STR,
    "summary": STR,
    "categories": STRS,
    "decisions": _DECISIONS,
    "open_questions": STRS,
    "related_entities": STRS,
}
FIELDS: dict[str, dict[str, Shape]] = {
    "conversation.save": {
        **_TOPIC,
        "conversation_id": STR,
        "source": STR,
        "session_id": STR,
        "conversation_type": STR,
        "overall_summary": STR,
        "cross_topic_insights": STRS,
        "topics": listof(record(_TOPIC)),
        "transcript": record({"tokens": INT, "chars": INT, "text": STR, "blob": STR}),
    },
}
