"""``pearl-verl <command>``: the package's command line.

Each command lives in its own module, which exposes ``register(subparsers)``: it adds one
sub-parser and sets ``handler`` (``args -> exit code``). Heavy imports stay inside the handlers so
``pearl-verl --help`` is fast.
"""

from __future__ import annotations

import argparse
import errno
import importlib
import logging
import os
import sys
import traceback
import warnings
from collections.abc import Iterator, Sequence
from typing import Any, NoReturn

from pearl_verl import __version__, out_paths
from pearl_verl.advantage.failure_guard import TrainingStalled
from pearl_verl.children import Stopped, ignore_stop_signals, raise_on_stop_signals, restore_signals
from pearl_verl.errors import InputError
from pearl_verl.ranges import Range, shown
from pearl_verl.redact import RedactingStream, redact

COMMAND_MODULES: tuple[str, ...] = (
    "pearl_verl.verl_plugin.doctor_cli",
    "pearl_verl.advantage.report_cli",
    "pearl_verl.student.simulate_cli",
    "pearl_verl.knowledge.decompose_cli",
    "pearl_verl.judge.judge_cli",
    "pearl_verl.judge.check_cli",
    "pearl_verl.judge.fitted.fit_cli",
    "pearl_verl.eval.tutor_cli",
    "pearl_verl.eval.simulator_cli",
    "pearl_verl.eval.rm_cli",
    "pearl_verl.eval.mtb_cli",
    "pearl_verl.eval.mathdial_cli",
    "pearl_verl.compare.cli",
    "pearl_verl.data.prepare_cli",
    "pearl_verl.sft.gen_cli",
    "pearl_verl.train_local.train_cli",
    "pearl_verl.plan.plan_cli",
    "pearl_verl.view.view_cli",
    "pearl_verl.view.convert_cli",
)


def main(
    argv: Sequence[str] | None = None, modules: Sequence[str] = COMMAND_MODULES, prog: str = "pearl-verl",
    restore_handlers: bool = True,
) -> int:
    """Run one command of ``modules``; returns the process exit code.

    ``restore_handlers``: put back the signal handlers the command replaced (a program that runs commands in process,
    as the tests do, keeps its Ctrl-C). The console script ignores stop signals instead, down to the exit: with
    Python's own handlers back, a second Ctrl-C there ended a stopped command by SIGINT (-2), not with 130.
    """
    _printable_streams()
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (s if isinstance(s, RedactingStream) else RedactingStream(s) for s in streams)
    handlers = raise_on_stop_signals()  # every stop signal unwinds alike, so every child is stopped on the way out
    try:
        return _main(argv, modules, prog)
    except Stopped as exc:  # before the command was known (importing its module, the parse): the line names the program
        print(f"{prog}: {exc}", file=sys.stderr)
        return exc.code
    finally:
        if restore_handlers:
            restore_signals(handlers)
        else:
            ignore_stop_signals()
        sys.stdout, sys.stderr = streams


def _main(argv: Sequence[str] | None, modules: Sequence[str], prog: str) -> int:
    parser = build_parser(modules, prog)
    out_paths.begin_parse()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(name)s: %(message)s"
    )
    if not args.verbose:
        _on_root_handlers(LibraryLogsFilter)  # first: what it drops is never redacted
        _quiet_transformers()
    _redact_logs_and_warnings()
    if args.command is None:
        parser.print_help()
        return 2
    problem = out_paths.clash(vars(args), _spellings(parser, args))
    if problem:
        return _report(InputError(problem), 2, args.verbose)
    try:
        return args.handler(args)
    except InputError as exc:
        return _report(exc, 2, args.verbose)
    except TrainingStalled as exc:  # not the user's input: the endpoints failed, exit 1
        return _report(exc, 1, args.verbose)
    except Stopped as exc:  # its children were stopped on the way here
        print(f"{prog} {args.command}: {exc}{getattr(args, 'stop_hint', '')}", file=sys.stderr)
        return exc.code
    except OSError as exc:
        if exc.errno != errno.ENAMETOOLONG:  # other I/O failures keep their traceback
            raise
        # a path given on the command line that no file system can hold, wherever it is first used
        return _report(InputError(f"{shown(str(exc.filename))}: the name is too long for the file system."), 2,
                       args.verbose)


def _printable_streams() -> None:
    """Let stdout and stderr print any text, escaping what their encoding cannot hold.

    A file name that is not valid UTF-8 reaches Python as lone surrogates (``\udcff``); printing it
    in an error or a "wrote FILE" line would raise UnicodeEncodeError and bury the message under a
    traceback. Escaped (``\udcff``), the line still names the file.
    """
    for stream in (sys.stdout, sys.stderr):
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def _report(exc: Exception, code: int, verbose: bool) -> int:
    """One ``error:`` line for an expected failure (its traceback too under ``-v``); returns ``code``.

    Only the project's own :class:`InputError` and :class:`TrainingStalled` get here: any other
    exception, a library's ``ValueError`` included, is a bug and keeps its traceback.
    """
    if verbose:
        print(redact("".join(traceback.format_exception(exc))), end="", file=sys.stderr)
    print(redact(f"error: {exc}"), file=sys.stderr)
    return code


class DefaultsFormatter(argparse.HelpFormatter):
    """Help that says each flag's allowed values and default: a number flag's range (its type is a
    :meth:`Range.flag`) where the text has no ``Allowed:``, then ``(default: VALUE)`` where the text names
    no default and the value says something (not None, a switch's False, an empty list). A choice's
    values are argparse's own ``{a,b}``."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text, default = action.help or "", action.default
        allowed = getattr(action.type, "__self__", None)
        if isinstance(allowed, Range) and "Allowed:" not in text:
            text = allowed.in_help(text)
        if ("default" in text or default is None or default is argparse.SUPPRESS or isinstance(default, bool)
                or default == [] or (not action.option_strings and action.nargs not in ("?", "*"))):
            return text
        return f"{text} (default: %(default)s)"


class RedactingParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors pass through :func:`redact`, its help written by :class:`DefaultsFormatter`.

    argparse repeats the offending value (``invalid choice: 'sk-...'``, ``unrecognized arguments``);
    sub-parsers are made of the same class, so every command's errors are covered.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", DefaultsFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        super().error(redact(message))


class RedactingFilter(logging.Filter):
    """Replace secret-shaped tokens in a record's message and traceback before any handler writes it."""

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            record.msg, record.args = redact(record.getMessage()), ()
        except (TypeError, ValueError):  # a malformed record: leave it to the handler's own error reporting
            return True
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = redact(record.exc_text)
        return True


class LibraryLogsFilter(logging.Filter):
    """Pass pearl_verl's own records and every library's errors; other library records wait for ``-v``.

    verl logs its platform search at WARNING on import (``No supported accelerator detected``) on
    every machine without a GPU; a person reading a command's summary should not have to tell that
    apart from our warnings.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno >= logging.ERROR or record.name == "pearl_verl" or record.name.startswith("pearl_verl.")


def _quiet_transformers() -> None:
    """transformers logs through a handler of its own, past the root filter: its warnings (vLLM's import of it
    without torchvision prints one) wait for ``-v`` too, here and in the processes a command starts."""
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    if "transformers" in sys.modules:
        sys.modules["transformers"].utils.logging.set_verbosity_error()


def _on_root_handlers(kind: type[logging.Filter]) -> None:
    """Install a ``kind`` filter on each root handler that has none (records of child loggers reach
    only handler filters, not the ``pearl_verl`` logger's); idempotent."""
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, kind) for f in handler.filters):
            handler.addFilter(kind())


def _redact_logs_and_warnings() -> None:
    """Install :class:`RedactingFilter` on the root handlers and redact formatted warnings; both idempotent."""
    _on_root_handlers(RedactingFilter)
    if not getattr(warnings.formatwarning, "redacting", False):
        plain = warnings.formatwarning

        def formatwarning(*args: Any, **kwargs: Any) -> str:
            return redact(plain(*args, **kwargs))

        formatwarning.redacting = True  # type: ignore[attr-defined]
        warnings.formatwarning = formatwarning


def build_parser(modules: Sequence[str] = COMMAND_MODULES, prog: str = "pearl-verl") -> argparse.ArgumentParser:
    parser = RedactingParser(prog=prog, description="PEARL Socratic-tutor RL as a verl plugin.")
    parser.add_argument("--version", action="version", version=f"pearl_verl {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging, with the libraries' own warnings")
    sub = parser.add_subparsers(dest="command", metavar="<command>")
    for module in modules:
        importlib.import_module(module).register(sub)
    return parser


def _spellings(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict[str, str]:
    """Destination -> how the parsed command's line spells it (``-o/--output``; a positional by its name)."""
    names: dict[str, str] = {}
    while parser is not None:
        chosen = None
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                chosen = action.choices.get(getattr(args, action.dest, None) or "")
            elif action.dest not in names:
                names[action.dest] = "/".join(action.option_strings) or action.dest
        parser = chosen
    return names


def command_parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """``(command path, its parser)`` for ``parser`` and every sub-command below it, depth first."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from command_parsers(sub, (*path, name))


def main_exit() -> None:
    """Console-script entry: exit with :func:`main`'s code; an unexpected traceback is redacted too."""
    sys.excepthook = _redacting_excepthook
    sys.exit(main(restore_handlers=False))


def _redacting_excepthook(kind: type[BaseException], exc: BaseException, tb: Any) -> None:
    print(redact("".join(traceback.format_exception(kind, exc, tb))), end="", file=sys.stderr)


if __name__ == "__main__":
    main_exit()
