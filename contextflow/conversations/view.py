"""Conversations view: the latest saved version of each conversation record.

Pure fold over `conversation.save` events. A record's identity is its project (the event's
`project` field, else `shared`) and its conversation id; saving it again replaces it. The
save with the highest `Event.key` wins whatever order events arrive in, and the lowest key
seen is kept as the time it was first saved.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from contextflow.core.events import Event, OrderKey
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


def identity_of(event: Event) -> ConversationKey | None:
    value = event.data.get("conversation_id") if event.kind == SAVE_KIND else None
    return (project_of(event), value) if isinstance(value, str) and value else None


class ConversationsView:
    name = "conversations"

    def initial(self) -> ConversationsState:
        return ConversationsState()

    def apply(self, state: ConversationsState, event: Event) -> None:
        identity = identity_of(event)
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
