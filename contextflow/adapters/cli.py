"""`contextflow` command line, built from the operations table.

Each operation with `command` words becomes a command whose flags come from its parameters;
running it parses, checks the arguments (errors name the flags as typed here), calls the
same function as the MCP tool and prints its reply as text or JSON. Errors go to stderr
with the exit code `core.errors.exit_code` gives (2 bad input, 3 not found, 4 store failure).
Nothing but argparse and the table is imported until a command runs; `--version` and
`hook EVENT` (run on every prompt) answer before even that.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from contextflow import __version__
from contextflow.adapters.batch import BATCH_OPERATIONS, BATCH_WORDS

if TYPE_CHECKING:
    import argparse

    from contextflow.app import App
    from contextflow.core.errors import ContextflowError
    from contextflow.operations.spec import Operation, Param

OUTPUT_FORMATS = ("text", "json", "markdown")
STORE_FLAGS = ("--store", "--db", "--format")  # global flags that take a value, before the command word


def group_help(word: str) -> str:
    """Help for a command word that groups several commands (`contextflow context set` ...): what its
    feature says of it (`Feature.commands`), then its actions as the table lists them."""
    from contextflow.features import features
    from contextflow.operations.spec import table_of

    for feature in features():
        if word in feature.commands and (table := table_of(feature)):
            actions = [op.command[1] for op in table.operations if op.command and op.command[0] == word]
            return f"{feature.commands[word]} ({', '.join(actions)})"
    raise KeyError(f"no feature describes the command word {word!r} (Feature.commands)")


def build_parser(only: str | None = None, batch: bool = False) -> argparse.ArgumentParser:
    """The whole CLI, or with `only` just that command's branch (a hook or a script pays for one
    command's flags, not sixty; usage errors and --help of that command read the same). With
    `batch` (`--stdin` given), required arguments may come from the lines instead."""

    from contextflow.operations.spec import operations

    parser = _parser_class()(
        prog="contextflow",
        description="Shared memory for AI coding agents: MCP server and CLI over append-only JSONL logs.",
    )
    parser.add_argument("--version", action="version", version=f"contextflow {__version__}")
    parser.add_argument(
        "--store", "--db", dest="store", help="store folder (overrides CONTEXTFLOW_STORE and discovery; --db as ctx)"
    )
    parser.add_argument(
        "--format",
        dest="global_format",
        choices=(*OUTPUT_FORMATS,),
        help="output format of any command, as after it: text (default), json or markdown",
    )
    top = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    groups: dict[str, Any] = {}
    for op in operations():
        if op.command is None or (only is not None and op.command[0] != only):
            continue
        sub = top
        if len(op.command) == 2:
            word = op.command[0]
            if word not in groups:
                help_text = group_help(word)
                group = top.add_parser(word, help=help_text, description=help_text[:1].upper() + help_text[1:] + ".")
                groups[word] = group.add_subparsers(dest=f"{word}_command", metavar="ACTION", required=True)
            sub = groups[word]
        add_command(sub, op, batch)
    return parser


def _parser_class() -> type[argparse.ArgumentParser]:
    """argparse's parser, whose usage errors are one line (README: "Errors go to stderr, one line") naming the
    command they are about and where its help is; subcommands' parsers are of the same class."""
    import argparse

    class OneLineErrors(argparse.ArgumentParser):
        def error(self, message: str) -> NoReturn:
            if message.startswith("argument COMMAND: invalid choice"):
                word = message.split("'")[1] if "'" in message else "?"
                message = f"unknown command {word!r}"
            self.exit(2, f"{self.prog}: error: {message} (see `{self.prog} --help`)\n")

        def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
            parsed, extras = self.parse_known_args(args, namespace)
            if extras:  # said by the command they were given to, with its usage, not the top-level one's
                op = getattr(parsed, "operation", None)
                prog = op.command_line() if op is not None and op.command else self.prog
                self.exit(2, f"{prog}: error: unrecognized arguments: {' '.join(extras)} (see `{prog} --help`)\n")
            return parsed

    return OneLineErrors


def add_command(sub: Any, op: Operation, batch: bool = False) -> None:
    description = op.cli_description or op.summary
    command: argparse.ArgumentParser = sub.add_parser(
        op.command[-1] if op.command else op.name, help=_first_lower(op.summary.rstrip(".")), description=description
    )
    for param in op.params:
        if param.cli:
            _add_argument(command, param, batch)
    if op.name in BATCH_OPERATIONS:
        command.add_argument(
            "--stdin",
            action="store_true",
            help="read many items as JSON lines (the tool's "
            "arguments, flags as defaults) and store them in one write: all or nothing",
        )
    if not any(p.cli and p.cli_name() == "--format" for p in op.params):  # else the operation has its own
        if op.formats:
            command.add_argument(
                "--format", choices=op.formats, help="output format: text (default; markdown is the same), json"
            )
        else:  # taken only to be refused with the reason (`_apply_global_format`), not as an unknown flag
            command.add_argument("--format", help=argparse_suppress())
    command.set_defaults(operation=op)


def _add_argument(parser: argparse.ArgumentParser, param: Param, batch: bool = False) -> None:
    schema = param.schema
    required = param.required and not batch
    kind = schema.get("type")
    options: dict[str, Any] = {"help": param.cli_help or _first_lower(param.description.rstrip(".")) or None}
    if param.metavar or param.positional:
        options["metavar"] = param.cli_name() if param.positional else param.metavar
    if "enum" in schema:
        options["choices"] = schema["enum"]
    elif kind == "array" and "enum" in schema.get("items", {}):  # each repeated value is checked
        options["choices"] = schema["items"]["enum"]
    if kind in ("integer", "number"):
        options["type"] = int if kind == "integer" else float
    if param.positional:
        if kind == "array":
            options["nargs"] = "+" if required else "*"
        elif not required:
            options["nargs"] = "?"
        parser.add_argument(param.name, **options)
        return
    options["dest"] = param.name
    options["default"] = param.cli_default
    if kind == "boolean":
        from argparse import BooleanOptionalAction

        options["action"] = BooleanOptionalAction if param.negatable else "store_true"
    elif kind == "array":
        options["action"] = "append"
    if required and param.cli_default is None:
        options["required"] = True
    parser.add_argument(param.cli_name(), *param.aliases, **options)


def _first_lower(text: str) -> str:
    return text[:1].lower() + text[1:] if text[1:2].islower() or len(text) < 2 else text


def arguments_of(op: Operation, namespace: argparse.Namespace) -> dict[str, Any]:
    """The parsed flags as the operation's arguments; JSON objects are read from their text (or stdin)."""
    given: dict[str, Any] = {}
    for param in op.params:
        if not param.cli:
            continue
        value = getattr(namespace, param.name, None)
        if value is None:
            continue
        if param.schema.get("type") == "object" and isinstance(value, str):
            value = json_object(value, param.cli_name())
        given[param.name] = value
    return given


def json_object(raw: str, name: str) -> dict[str, Any]:
    """A JSON object from the command line; '-' reads it from stdin."""
    from contextflow.core import jsonio
    from contextflow.core.errors import InputError

    text = sys.stdin.read() if raw == "-" else raw
    try:
        value = jsonio.loads(text)
    except jsonio.DecodeError:
        raise InputError(
            f'{name} is not valid JSON; pass an object such as \'{{"status": "waiting"}}\' (or - to read stdin)'
        ) from None
    if not isinstance(value, dict):
        raise InputError(f'{name} must be a JSON object such as \'{{"text": "..."}}\', got {type(value).__name__}')
    return value


def in_cli_words(error: ContextflowError, op: Operation) -> str:
    """An error as a CLI user reads it: the arguments and operations its message names (`InputError`'s
    marks) said as this command's flags and the commands that run them."""
    from contextflow.core.errors import InputError
    from contextflow.operations.spec import operations

    if not isinstance(error, InputError):
        return str(error)
    table = {other.name: other for other in operations()}

    def argument(name: str) -> str:
        mine = [p for p in op.params if p.name == name and p.cli]
        found = mine or [p for other in table.values() for p in other.params if p.name == name and p.cli]
        return found[0].cli_name() if found else name

    def command(name: str) -> str:
        other = table.get(name)
        return f"`{other.command_line()}`" if other is not None and other.command else name

    def run(name: str) -> str:
        other = table.get(name)
        return f"run `{other.command_line()}`" if other is not None and other.command else f"call {name}"

    return error.worded(argument, command, run)


def help_words(text: str, op: Operation) -> str:
    """Help text in this interface's words: a tool it names reads as its command (`list_sessions`:
    `contextflow sessions`), an argument of this command as its flag (`session_id`: `--session`)."""
    import re

    from contextflow.operations.spec import operations

    for other in operations():
        if other.tool and other.command and other.name in text:
            text = re.sub(rf"(?<![`\w]){other.name}\b", f"`{other.command_line()}`", text)
    for param in op.params:
        if param.cli and not param.positional and "_" in param.name:
            text = re.sub(rf"(?<![\w-]){param.name}\b", param.cli_name(), text)
    return text


def _help_in_cli_words(parser: argparse.ArgumentParser) -> None:
    """Each command's description and flag help in this interface's words (`help_words`)."""
    import argparse

    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        for sub in action.choices.values():
            op = sub.get_default("operation")
            if op is not None:
                sub.description = help_words(sub.description, op) if sub.description else None
                for flag in sub._actions:
                    if flag.help:
                        flag.help = help_words(flag.help, op)
            _help_in_cli_words(sub)


def argparse_suppress() -> str:
    import argparse

    return argparse.SUPPRESS


def _apply_global_format(op: Operation, args: argparse.Namespace) -> str | None:
    """`--format` before the command (ctx's global flag) is the command's own when that was not given. A
    format the command does not honour is refused: the message, naming the formats it takes, is returned."""
    own = next((p for p in op.params if p.cli and p.cli_name() == "--format"), None)
    wanted = args.global_format
    if own is None:
        if not op.formats and (args.format or wanted):
            return "it takes no --format: what it prints is not a reply (a protocol, a hook's answer or a menu)"
        args.format = args.format or wanted or "text"
        return None
    choices = own.schema.get("enum", ())
    if wanted and wanted not in choices:
        return f"it does not print {wanted}: its --format takes {' or '.join(choices)}"
    if wanted and args.format == own.cli_default:
        args.format = wanted
    return None


def _command_word(argv: Sequence[str]) -> str | None:
    """The command the arguments name, when they name a known one before anything else."""
    from contextflow.operations.spec import operations

    words = list(argv)
    while words[:1] and words[0].split("=")[0] in STORE_FLAGS:
        words = words[1:] if "=" in words[0] else words[2:]
    if words and any(op.command and op.command[0] == words[0] for op in operations()):
        return words[0]
    return None


def _batch(op: Operation, app: App, defaults: dict[str, Any], format_: str) -> int:
    from contextflow.adapters.batch import run_batch

    stored, replies = run_batch(op, app, defaults)
    if format_ == "json":
        from contextflow.core.text import clean_data
        from contextflow.operations.provenance import dumps

        print(dumps(clean_data({"stored": stored, "results": replies})))
    else:
        print(f"Stored {stored} item(s) from stdin in one write ({op.command_line()} --stdin).")
    return 0


SUPPORTED_PLATFORMS = "Linux (tested), macOS, and Windows through WSL"


def unsupported_platform() -> str | None:
    """Why this platform cannot run contextflow, in one line, or None. Native Windows lacks what the logs'
    safety rests on (O_NOFOLLOW opens, POSIX advisory locks): it runs in WSL until native support is tested."""
    if os.name == "nt" or not hasattr(os, "O_NOFOLLOW"):
        return (
            "native Windows is not supported yet (the logs' safety needs O_NOFOLLOW and POSIX file locks); "
            f"contextflow runs on {SUPPORTED_PLATFORMS}: install it inside WSL and point clients at it there"
        )
    return None


def _os_error(exc: OSError) -> str:
    """An operating-system error as one line: the file, what went wrong, what to do."""
    where = f"{exc.filename}: " if exc.filename else ""
    reason = (exc.strerror or str(exc)).lower()
    advice = (
        "give your user read and write access to the store folder and its files (chmod 700 for the folder)"
        if isinstance(exc, PermissionError)
        else "check the path and the disk, then run it again; nothing already stored was changed"
    )
    return f"cannot use {where}{reason}; {advice}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; a reader that closed the pipe (`contextflow sessions | head -1`) ends it quietly, exit 0."""
    try:
        return _main(argv)
    except BrokenPipeError:
        _stdout_to_devnull()
        return 0


def _stdout_to_devnull() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail on the closed pipe."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (a test's capture): nothing will be flushed
        pass


def _flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_to_devnull()


def _main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv == ["--version"]:  # asked on every agent start by some clients: answer before building anything
        print(f"contextflow {__version__}")
        return 0
    if unsupported := unsupported_platform():
        print(f"contextflow: error: {unsupported}", file=sys.stderr)
        return 4
    if argv == ["serve"]:  # how every client starts the server: no parser before the handshake
        from contextflow.adapters.server.app import serve_main

        return serve_main()
    if len(argv) == 2 and argv[0] == "hook" and not argv[1].startswith("-"):  # on every prompt: no parser, no table
        import gc

        gc.disable()  # a hook is short and bounded by its budgets: no collector passes over the modules it loads
        try:
            from contextflow.admin.clients import run_hook

            return run_hook(None, argv[1])
        finally:
            gc.enable()
    word = _command_word(argv)
    parser = build_parser(word, batch="--stdin" in argv and word in BATCH_WORDS)
    if {"-h", "--help"} & set(argv):  # help in the words of this interface: commands and flags, not tools
        _help_in_cli_words(parser)
    args = parser.parse_args(argv)
    env: dict[str, str] = dict(os.environ)  # what this command's App is opened with; the process's is left alone
    if args.store:
        from contextflow.core.locate import STORE_OPTION_MARKER

        env.update({"CONTEXTFLOW_STORE": args.store, STORE_OPTION_MARKER: args.store})  # doctor: the option chose it
    op: Operation = args.operation
    refused = _apply_global_format(op, args)
    if refused:
        print(f"{op.command_line()}: error: {refused}", file=sys.stderr)
        return 2
    app: App | None = None
    from contextflow.core.errors import ContextflowError, exit_code
    from contextflow.operations.arguments import check_arguments

    try:
        if op.name in BATCH_OPERATIONS and getattr(args, "stdin", False):
            from contextflow.app import App

            app = App.open(env, cwd=os.getcwd())  # the same project rule as a single write
            return _batch(op, app, arguments_of(op, args), args.format)
        checked = check_arguments(op, arguments_of(op, args), cli=True)
        if op.needs_store:
            from contextflow.app import App

            app = App.open(env, cwd=os.getcwd())  # the project follows the current folder's repository
            if sys.stderr.isatty():
                app.store.progress = lambda message: print(f"contextflow: {message}", file=sys.stderr, flush=True)
        reply = op.run(app if op.needs_store else env, checked)  # no store: the environment it runs in
        if not reply.shown:
            return reply.exit
        if args.format == "json":  # the data, every string cleaned
            from contextflow.core.text import clean_data
            from contextflow.operations.provenance import dumps

            print(dumps(clean_data(reply.data)))
        else:  # the text (a graph command's markdown is its own text)
            print(reply.text.rstrip("\n"))
        if reply.remark:
            print(f"contextflow: {reply.remark}", file=sys.stderr)
        return reply.exit
    except ContextflowError as exc:
        print(f"contextflow: error: {in_cli_words(exc, op)}", file=sys.stderr)
        return exit_code(exc)
    except BrokenPipeError:  # the reader left: `main` ends quietly
        raise
    except OSError as exc:  # a file the store or the command needed could not be used: one line, not a traceback
        from contextflow.core.errors import EXIT_STORE

        print(f"contextflow: error: {_os_error(exc)}", file=sys.stderr)
        return EXIT_STORE
    except KeyboardInterrupt:
        from contextflow.core.errors import EXIT_CANCELLED

        return EXIT_CANCELLED
    finally:
        if app is not None:
            _flush_stdout()  # the reply is out before any closing work
            app.close()
