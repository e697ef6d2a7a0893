"""The timeline: threads of thoughts, tangents and "you are here" positions (`timeline_*` tools and
`contextflow timeline ...` commands)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from contextflow.operations.params import integer, string, writer
from contextflow.operations.spec import Operation, Param, Table, deferred
from contextflow.timeline.fields import (
    DEFAULT_THOUGHTS,
    DEFAULT_WHERE,
    RETURN_STATUSES,
    STATUS_VERBS,
    THOUGHT_STATUSES,
    THOUGHT_TYPES,
    THOUGHTS_LIMIT,
    THREAD_STATUSES,
    THREADS_LIMIT,
    WHERE_LIMIT,
)

if TYPE_CHECKING:
    from contextflow.timeline import present
else:
    present = deferred("contextflow.timeline.present")


AGENT = writer()
THREAD = string("thread_id", "Thread id or a unique prefix of it.", required=True, positional=True)
METADATA = Param(
    "metadata",
    {"type": "object", "description": "Links: files, commits, session ids."},
    cli_help="JSON object of links (files, commits, ...)",
    hint='e.g. {"files": ["src/app.py"], "commit": "abc123"}',
)
THREAD_STATUS = string("status", enum=(*THREAD_STATUSES, *STATUS_VERBS))
_RETURN_VERBS = tuple(verb for status in RETURN_STATUSES for verb, to in STATUS_VERBS.items() if to == status)
RETURN_STATUS = string("status", "Default completed.", (*RETURN_STATUSES, *_RETURN_VERBS))


OPERATIONS = (
    Operation(
        "timeline_create_thread",
        "Start a named thread of work (a journey from A to B).",
        (
            string("name", required=True, positional=True),
            string("description"),
            string("parent_thought_id", "Makes it a tangent.", flag="--parent-thought"),
            AGENT,
        ),
        present.timeline_create_thread,
        command=("timeline", "create"),
        read_only=False,
    ),
    Operation(
        "timeline_list_threads",
        "List threads with status and current position, most recent first.",
        (
            THREAD_STATUS,
            integer("limit", *THREADS_LIMIT),
        ),
        present.timeline_list_threads,
        command=("timeline", "threads"),
    ),
    Operation(
        "timeline_get_thread",
        "A thread's ordered thoughts, position and tangent threads.",
        (
            THREAD,
            integer("limit", *THOUGHTS_LIMIT, f"Latest N thoughts; default {DEFAULT_THOUGHTS}."),
        ),
        present.timeline_get_thread,
        command=("timeline", "show"),
    ),
    Operation(
        "timeline_add_thought",
        "Add a thought after the thread's current position and move there.",
        (
            THREAD,
            string("content", required=True, positional=True),
            string("thought_type", "Default progress.", THOUGHT_TYPES, flag="--type"),
            METADATA,
            AGENT,
            string("previous_thought_id", "The current position, if you name it (a check).", cli=False),
            string("parent_thought_id", "Alias of previous_thought_id (seed 001's name).", cli=False),
        ),
        present.timeline_add_thought,
        command=("timeline", "add"),
        read_only=False,
    ),
    Operation(
        "timeline_update_thought",
        "Change a thought's status, content, type or metadata.",
        (
            string("thought_id", "Thought id or unique prefix.", required=True, positional=True),
            string("status", enum=THOUGHT_STATUSES),
            string("content"),
            string("thought_type", enum=THOUGHT_TYPES, flag="--type"),
            METADATA,
            AGENT,
        ),
        present.timeline_update_thought,
        command=("timeline", "update"),
        read_only=False,
    ),
    Operation(
        "timeline_update_thread",
        "Rename a thread or set its status: paused (or pause), active (resume), completed (complete), "
        "abandoned (abandon).",
        (
            THREAD,
            string("name"),
            string("description"),
            THREAD_STATUS,
            AGENT,
        ),
        present.timeline_update_thread,
        command=("timeline", "set-thread"),
        read_only=False,
    ),
    Operation(
        "timeline_where_am_i",
        "Current position, last thought and trail of every active thread.",
        (integer("limit", *WHERE_LIMIT, f"Most recent N; default {DEFAULT_WHERE}."),),
        present.timeline_where_am_i,
        command=("timeline", "where"),
    ),
    Operation(
        "timeline_go_tangent",
        "Mark a tangent_start on a thread and start a child thread for the tangent.",
        (
            string("thread_id", "The thread you leave (id or prefix).", required=True, positional=True),
            string("name", "Tangent thread name.", required=True, positional=True),
            string("description"),
            string("content", "Why; default 'Tangent: <name>'."),
            Param("metadata", METADATA.schema, cli=False, hint=METADATA.hint),
            AGENT,
        ),
        present.timeline_go_tangent,
        command=("timeline", "tangent"),
        read_only=False,
    ),
    Operation(
        "timeline_return",
        "Close or pause a tangent thread and restore the parent thread's position.",
        (
            string("thread_id", "The tangent thread id or prefix.", required=True, positional=True),
            RETURN_STATUS,
            AGENT,
        ),
        present.timeline_return,
        command=("timeline", "return"),
        read_only=False,
    ),
)

TABLE = Table(operations=OPERATIONS)
