"""Conversations view: the latest saved version of each conversation record.

Pure fold over `conversation.save` events. A record's identity is its project (the event's
`project` field, else `shared`) and its conversation id; saving it again replaces it. The
save with the highest `Event.key` wins whatever order events arrive in, and the lowest key
seen is kept as the time it was first saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from contextflow.core.events import Event, OrderKey
from contextflow.core.fold import overwritten
from contextflow.core.project import project_of

SAVE_KIND = "conversation.save"

ConversationKey = tuple[str, str]  # (project, conversation id)


@dataclass
class ConversationEntry:
    event: Event  # the latest save
    first_key: OrderKey
    first_ts: str
    versions: int = 1

    @property
    def conversation_id(self) -> str:
        return str(self.event.data["conversation_id"])


@dataclass
class ConversationsState:
    records: dict[ConversationKey, ConversationEntry] = field(default_factory=dict)


def _identity(event: Event) -> ConversationKey | None:
    value = event.data.get("conversation_id") if event.kind == SAVE_KIND else None
    return (project_of(event), value) if isinstance(value, str) and value else None


class ConversationsView:
    name = "conversations"

    def initial(self) -> ConversationsState:
        return ConversationsState()

    def unneeded(self, events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
        """Compaction (fold.Compactable): a save followed in the same log by a later save of the
        same conversation keeps only its conversation_id and project (it still counts as a version
        and may be the first save); the latest save stays whole."""
        older = overwritten(events, lambda event: [identity] if (identity := _identity(event)) else [])
        found = {event.id: () for event in events if _identity(event) is None}
        return found | dict.fromkeys(older, ("conversation_id", "project"))

    def apply(self, state: ConversationsState, event: Event) -> None:
        identity = _identity(event)
        if identity is None:
            return
        entry = state.records.get(identity)
        if entry is None:
            state.records[identity] = ConversationEntry(event, event.key, event.ts)
            return
        entry.versions += 1
        if event.key > entry.event.key:
            entry.event = event
        if event.key < entry.first_key:
            entry.first_key, entry.first_ts = event.key, event.ts
