"""Conversations view: the latest saved version of each conversation record.

Pure fold over `conversation.save` events. Saving a conversation id again replaces the
record; the version with the highest `Event.key` wins whatever order events arrive in, and
the lowest key seen is kept as the time it was first saved.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from contextflow.events import Event, OrderKey

SAVE_KIND = "conversation.save"


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
    records: dict[str, ConversationEntry] = field(default_factory=dict)

    def newest_first(self, project: str | None = None) -> list[ConversationEntry]:
        found = [
            entry for entry in self.records.values() if project is None or entry.event.data.get("project") == project
        ]
        found.sort(key=lambda entry: entry.event.key, reverse=True)
        return found


def _conversation_id(event: Event) -> str | None:
    value = event.data.get("conversation_id")
    return value if isinstance(value, str) and value else None


class ConversationsView:
    name = "conversations"

    def initial(self) -> ConversationsState:
        return ConversationsState()

    def unneeded(self, events: Sequence[Event]) -> dict[str, tuple[str, ...]]:
        """Compaction (fold.Compactable): a save followed in the same log by a later save of the
        same conversation keeps only its conversation_id (it still counts as a version and may be
        the first save); the latest save stays whole."""
        latest: dict[str, OrderKey] = {}
        for event in events:
            if event.kind == SAVE_KIND and (cid := _conversation_id(event)):
                latest[cid] = max(latest.get(cid, event.key), event.key)
        found: dict[str, tuple[str, ...]] = {}
        for event in events:
            cid = _conversation_id(event) if event.kind == SAVE_KIND else None
            if cid is None:
                found[event.id] = ()
            elif event.key < latest[cid]:
                found[event.id] = ("conversation_id",)
        return found

    def apply(self, state: ConversationsState, event: Event) -> None:
        if event.kind != SAVE_KIND:
            return
        conversation_id = event.data.get("conversation_id")
        if not isinstance(conversation_id, str) or not conversation_id:
            return
        entry = state.records.get(conversation_id)
        if entry is None:
            state.records[conversation_id] = ConversationEntry(event, event.key, event.ts)
            return
        entry.versions += 1
        if event.key > entry.event.key:
            entry.event = event
        if event.key < entry.first_key:
            entry.first_key, entry.first_ts = event.key, event.ts
