"""The shape of every field of a context record's set and delete (core/fields.py checks them as lines are read)."""

from contextflow.core.fields import ANY, BOOL, STR, Shape

FIELDS: dict[str, dict[str, Shape]] = {
    "context.set": {
        "key": STR,
        "value": ANY,
        "category": STR,
        "label": STR,
        "thread_id": STR,
        "pinned": BOOL,
        "expires_at": STR,
    },
    "context.delete": {"key": STR},
}
