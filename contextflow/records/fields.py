"""The shape of every field of a context record's set and delete (core/fields.py checks them as lines are read),
and the limits, closed lists and defaults its table and its core both use (this module stays light)."""

from contextflow.core.fields import ANY, BOOL, STR, Shape

CLIPBOARD = "clipboard"
CATEGORIES = ("project", "pr", "machine", "waiting", "fact", CLIPBOARD)  # a closed list
DEFAULT_CATEGORY = "fact"  # for a key whose prefix is not a category, e.g. ticket:123
SINCE_DAYS = (0, 36_500)  # context_list's since_days: lowest, highest
DEFAULT_SINCE_DAYS = 7
LIMIT = (1, 500)
DEFAULT_LIMIT = 50

FIELDS: dict[str, dict[str, Shape]] = {
    "context.set": {
        "key": STR,
        "value": ANY,
        "category": STR,
        "label": STR,
        "thread_id": STR,
        "pinned": BOOL,
        "expires_at": STR,
        "source": STR,
    },
    "context.delete": {"key": STR},
}
