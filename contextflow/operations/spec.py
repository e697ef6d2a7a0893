"""What an operation is: one row of the table that both the MCP server and the CLI are built from.

An `Operation` names its parameters once (JSON schema, help text, CLI spelling), the function
that runs it, whether it writes, and and its CLI words. Tool schema and CLI command
derive from the same `Param`s.

Handlers are real references, imported on their first call so that reading the table stays
cheap. A table module names its presenter module once:

    if TYPE_CHECKING:
        from contextflow.records import present
    else:
        present = deferred("contextflow.records.present")

and then writes `present.context_set` in a row: the type checker and an editor see the real
function; at run time it is a `Deferred` that imports the module when first called.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache, cached_property
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from contextflow.app import App
    from contextflow.core.rest import Progress
    from contextflow.features import Feature

JSON = dict[str, Any]


@dataclass(frozen=True)
class Reply:
    """What an operation returns: text for people and models, and the same facts as JSON data (`data`)."""

    text: str
    # the JSON data, or a function of nothing that makes it from what the handler read: made only when asked
    # for (a text reply, as models get, never asks), so it must read nothing more
    payload: Any = field(default=None, compare=False)
    remark: str | None = None  # said beside the reply (the CLI prints it on stderr), e.g. what did not fit
    exit: int = 0  # the CLI's exit code after printing the text (doctor: 1 when it found problems)
    shown: bool = True  # False: the handler wrote its own output (serve, a hook, the picker); nothing to print

    @cached_property
    def data(self) -> Any:
        return self.payload() if callable(self.payload) else self.payload

    def __eq__(self, other: object) -> bool:  # (the data, however given)
        return isinstance(other, Reply) and self._facts() == other._facts()

    def _facts(self) -> tuple[Any, ...]:
        return self.text, self.data, self.remark, self.exit, self.shown

    @classmethod
    def finished(cls, exit: int = 0) -> Reply:
        """The reply of a handler that wrote its own output: only its exit code is left to give."""
        return cls("", exit=exit, shown=False)


def partial(reply: Reply, progress: Progress | None, missing: str, empty: bool = False) -> Reply:
    """`reply`, first saying it is partial when read while the build had not reached most of the logs
    (`progress`, None once it has): `missing` (e.g. "older entries") not read yet are left out of it. JSON
    data that is a list keeps its shape (its text says it is partial). An `empty` reply ("no sessions") is
    never said from such a reading: it is asked again on the whole tables (`core.projections.never_unbuilt`)."""
    if progress is None:
        return reply
    if empty:
        from contextflow.core.errors import NotFoundError

        raise NotFoundError(
            f"none among what this machine has read of the store's logs so far ({progress.text()}); ask again shortly"
        )
    note = (
        f"PARTIAL: this machine is still reading the store's logs into its local tables ({progress.text()}); "
        f"{missing} not read yet are missing below; ask again shortly."
    )

    def data() -> Any:
        return {**reply.data, "partial": progress._asdict()} if isinstance(reply.data, dict) else reply.data

    return replace(reply, text=f"{note}\n\n{reply.text}", payload=data)


def given(args: JSON, *names: str) -> JSON:
    """The arguments `names` as keywords for a core function: each one's value, None when not given."""
    return {name: args.get(name) for name in names}


class Deferred:
    """A function of a module not imported yet: the module is imported on the first call."""

    __slots__ = ("module", "name")

    def __init__(self, module: str, name: str) -> None:
        self.module, self.name = module, name

    def resolve(self) -> Callable[..., Any]:
        return _attribute(self.module, self.name)

    def __call__(self, *args: Any) -> Any:
        return self.resolve()(*args)

    def __repr__(self) -> str:
        return f"{self.module}.{self.name}"


@cache
def _attribute(module: str, name: str) -> Callable[..., Any]:
    function: Callable[..., Any] = getattr(importlib.import_module(module), name)
    return function


class deferred:
    """A stand-in for a module in a table: each attribute is a `Deferred` function of it."""

    def __init__(self, module: str) -> None:
        self._module = module

    def __getattr__(self, name: str) -> Deferred:
        if name.startswith("__"):
            raise AttributeError(name)
        return Deferred(self._module, name)


# Presenters take the App (for operations with needs_store=False, the environment the CLI runs in, or
# None) and the checked arguments.
Handler = Callable[[Any, JSON], Reply]


@dataclass(frozen=True)
class Param:
    """One argument. `schema` is its JSON schema (with a description); the rest says how the CLI spells it."""

    name: str
    schema: JSON
    required: bool = False
    positional: bool = False  # CLI: a positional argument instead of a --flag
    flag: str | None = None  # CLI: the flag, when not --name-with-dashes
    aliases: tuple[str, ...] = ()  # CLI: more spellings of the flag, e.g. ("-o",)
    metavar: str | None = None
    cli: bool = True  # offered on the CLI
    tool: bool = True  # offered to MCP clients
    cli_default: Any = None  # CLI default when the flag is left out (e.g. agent 'human')
    cli_help: str | None = None  # CLI help, when it differs from the schema description
    negatable: bool = False  # CLI booleans: also --no-FLAG
    hint: str | None = None  # said after a wrong value's error, e.g. an example of the right form

    @property
    def description(self) -> str:
        return str(self.schema.get("description", ""))

    def cli_name(self) -> str:
        """How the CLI user names this argument in messages."""
        if self.positional:
            return self.metavar or self.name.upper()
        return self.flag or "--" + self.name.replace("_", "-")


# The output formats every operation answers in: text for people and models, json for the reply's data.
FORMATS = ("text", "json")
FORMAT = Param("format", {"type": "string", "enum": list(FORMATS)}, cli=False)  # text is the default: the enum says it


@dataclass(frozen=True)
class Operation:
    name: str  # the MCP tool name; also how errors and docs refer to it
    summary: str  # tool description and CLI help
    params: tuple[Param, ...]
    handler: Handler  # takes (App or None, arguments), returns a Reply
    command: tuple[str, ...] | None = None  # CLI words, e.g. ("context", "set"); None: not on the CLI
    tool: bool = True  # offered as an MCP tool
    read_only: bool = True
    destructive: bool = False
    needs_store: bool = True  # False: the CLI runs it without opening the store
    # Structured data for MCP clients always (writes and other replies that quote no stored text),
    # or, for reads that show stored text, only when asked for with format=json.
    structured: bool | None = None
    cli_description: str | None = None  # longer CLI description, when the summary is not enough
    # The CLI's `--format` values it honours (markdown is the text); () for a command whose output is no
    # reply (the protocol of `serve`, a client's hook answer): any --format is refused, naming why.
    formats: tuple[str, ...] = ("text", "json", "markdown")

    def run(self, app: App | Mapping[str, str] | None, arguments: JSON) -> Reply:
        """The handler's reply, read soundly (`core.projections.soundly`): a write is never run twice."""
        if not self.needs_store or app is None or isinstance(app, Mapping):
            return self.handler(app, arguments)
        from contextflow.core.projections import soundly

        return soundly(app, lambda: self.handler(app, arguments), self.read_only)

    @property
    def always_structured(self) -> bool:
        return not self.read_only if self.structured is None else self.structured

    def tool_params(self) -> tuple[Param, ...]:
        """What MCP clients may pass; every read also takes `format` (json adds structured data)."""
        params = tuple(p for p in self.params if p.tool)
        return params if self.always_structured else (*params, FORMAT)

    def input_schema(self) -> JSON:
        params = self.tool_params()
        properties = {p.name: p.schema for p in params}
        schema: JSON = {"type": "object", "properties": properties, "additionalProperties": False}
        if required := [p.name for p in params if p.required]:
            schema["required"] = required
        return schema

    def command_line(self) -> str:
        return "contextflow " + " ".join(self.command or ())


def cli_only(words: str, summary: str, params: tuple[Param, ...], handler: Handler, **options: Any) -> Operation:
    """An operation the CLI alone offers (no MCP tool), named by its command words, e.g. "view create";
    `options` as for `Operation`."""
    return Operation(words, summary, params, handler, tuple(words.split()), tool=False, **options)


@dataclass(frozen=True)
class PromptArg:
    name: str
    description: str
    required: bool = False


@dataclass(frozen=True)
class PromptSpec:
    name: str
    description: str
    handler: Callable[[App, dict[str, str]], str]
    arguments: tuple[PromptArg, ...] = ()
    describe: Callable[[App], str] | None = None  # the description at listing time, when it names current facts


@dataclass(frozen=True)
class ResourceSpec:
    uri: str
    name: str
    description: str
    mime_type: str
    reader: Callable[[App], str]


@dataclass(frozen=True)
class Table:
    """One feature's table: its operations, and the prompts and resources the MCP server adds for it.

    The feature declares itself (its tool group, views, fields...) in its package's `__init__.py`
    (`contextflow.features.Feature`), which names this table's module. Dynamic prompts are built
    from the store on each listing; `prompt_signature` is a cheap value that changes exactly when
    their names or descriptions do.
    """

    operations: tuple[Operation, ...] = ()
    prompts: tuple[PromptSpec, ...] = ()
    resources: tuple[ResourceSpec, ...] = ()
    dynamic_prompts: tuple[Callable[[App], list[PromptSpec]], ...] = ()
    prompt_signature: Callable[[App], object] | None = None


def table_of(feature: Feature) -> Table | None:
    """The operations table the feature's declaration names (its module's `TABLE`), imported now."""
    if feature.table_module is None:
        return None
    table: Table = importlib.import_module(feature.table_module).TABLE
    return table


def operations() -> tuple[Operation, ...]:
    """Every feature's operations, in the features' order (`features.PACKAGES`)."""
    from contextflow.features import features

    return tuple(op for feature in features() if (table := table_of(feature)) for op in table.operations)
