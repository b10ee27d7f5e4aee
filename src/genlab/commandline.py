"""The root ``genlab`` command and the one error path of every ``genlab`` command.

:func:`new_app` makes the root command (``--debug``, ``--version``) that :mod:`genlab.cli` fills with every command
(and :func:`genlab.ifbench.cli.ifbench_app` with the ``ifbench`` group alone); :func:`run` runs a command line on
it and turns every error into one line on stderr and an exit code. The console script is :mod:`genlab.launch`.

Module-level imports: ``sys`` only; typer is imported when a command line is run. (No ``from __future__ import
annotations`` here: typer reads the root callback's annotations, which name what :func:`new_app` imports.)
"""

import sys
from typing import Any

HELP = "genlab: reproduce generalization papers, and use their tools on your own models."
INTERRUPTED = "interrupted; finished runs are kept, unfinished ones restart next time"

# Errors that genlab raises on purpose, by module, and those of them that are bad input (exit 2; every other one
# is exit 1). A module that was never imported cannot have raised its errors, so none is imported to classify one.
_ON_PURPOSE = {"genlab.harness.errors": ("GenlabError",)}
_BAD_INPUT = {
    "genlab.harness.errors": ("ConfigError", "UnknownStudyError"),
    "genlab.ifbench.readers": ("DataError",),
    "genlab.ifbench.core": ("KwargsError", "MissingDataError", "UnknownInstructionError"),
}


def new_app() -> Any:
    """The root ``genlab`` typer app, without commands: the group callback with ``--debug`` and ``--version``."""
    from typing import Annotated

    import typer

    app = typer.Typer(name="genlab", help=HELP, no_args_is_help=True, add_completion=False,
                      pretty_exceptions_enable=False)  # fmt: skip

    def version(value: bool) -> None:
        if value:
            from genlab import __version__

            print(f"genlab {__version__}")
            raise typer.Exit()

    @app.callback(help=HELP)
    def _main(
        debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
        version: Annotated[
            bool, typer.Option("--version", callback=version, is_eager=True, help="Print the version and exit.")
        ] = False,
    ) -> None:
        pass

    return app


def _click_exceptions() -> Any:
    """Where typer's ClickException lives: recent typer vendors its own click (typer._click)."""
    try:
        from typer._click import exceptions
    except ImportError:  # typer that uses the click package
        from click import exceptions
    return exceptions


def _exit_interrupted() -> None:
    """Say so and leave now: every store file is already written atomically, and interpreter shutdown would
    otherwise wait on the (terminated) process pool's bookkeeping thread."""
    import os

    print(INTERRUPTED, file=sys.stderr, flush=True)
    sys.stdout.flush()
    os._exit(130)


def _one_line(exc: BaseException) -> str:
    """An exception as one line: OS errors name the path and the reason, never a Python class name."""
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, OSError) and exc.strerror:  # no path known: the reason alone, without "[Errno N]"
        return exc.strerror
    return " ".join(str(exc).split()) or type(exc).__name__


def _loaded(table: dict[str, tuple[str, ...]]) -> tuple[type, ...]:
    return tuple(getattr(sys.modules[module], name) for module, names in table.items() if module in sys.modules
                 for name in names)  # fmt: skip


def _is_bad_input(exc: BaseException) -> bool:
    """Exit code 2 (bad input: a config, a name, a path, a file genlab cannot read) rather than 1 (a failure)."""
    return isinstance(exc, (OSError, *_loaded(_BAD_INPUT)))


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush does not raise BrokenPipeError again."""
    import contextlib
    import os

    with contextlib.suppress(OSError, ValueError):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _reader_left() -> bool:
    """True once click has met a closed pipe on stdout (it then wraps stdout to silence later flushes, and exits 1)."""
    return type(sys.stdout).__name__ == "PacifyFlushWrapper"


def run(app: Any, argv: list[str] | None = None) -> int:
    """Run one command line on ``app`` and return its exit code: the one error path of every genlab command.

    Errors are one sentence on stderr (tracebacks only with ``--debug``): 2 for bad input and usage errors
    (``error: ... (see 'genlab ifbench eval --help')``), 1 for a failure, 130 for Ctrl-C, 141 when the reader of
    stdout left (``genlab ifbench list | head -1``), as for a Unix tool killed by SIGPIPE."""
    import typer

    click_exc = _click_exceptions()
    args = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in args
    if debug:  # accepted anywhere on the line, passed where typer expects it
        args = ["--debug", *(a for a in args if a != "--debug")]
    try:
        code = app(args=args, prog_name="genlab", standalone_mode=False)
        sys.stdout.flush()  # a reader that left is met here, not at interpreter exit
        if isinstance(code, int) and code:  # click returns (not raises) typer.Exit codes in this mode
            if code == 130:  # typer turns Ctrl-C into Exit(130)
                _exit_interrupted()
            return code
        return 0
    except typer.Exit as exc:
        if isinstance(exc.__cause__, KeyboardInterrupt):
            _exit_interrupted()
        return exc.exit_code
    except typer.Abort:
        print("aborted", file=sys.stderr)
        return 130
    except click_exc.ClickException as exc:  # usage errors and bad parameters: one line too
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        message = " ".join(exc.format_message().split())
        if message:  # no message: a group called without a command, whose help was just printed
            print(f"error: {message}{hint}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        _exit_interrupted()
    except BrokenPipeError:  # the reader left: stop quietly
        _quiet_stdout()
        return 141
    except SystemExit:
        if _reader_left():  # click's own handling of a closed pipe (exit 1): the same as above
            _quiet_stdout()
            return 141
        raise
    except (RecursionError, MemoryError) as exc:
        if debug:
            raise
        what = "nested too deeply to read" if isinstance(exc, RecursionError) else "needs more memory than there is"
        print(f"error: the input {what}", file=sys.stderr)
        return 2
    except Exception as exc:
        if debug:
            raise
        if isinstance(exc, (ValueError, OSError, *_loaded(_ON_PURPOSE))) or _is_bad_input(exc):
            print(f"error: {_one_line(exc)}", file=sys.stderr)
            return 2 if _is_bad_input(exc) else 1
        print(f"error: {type(exc).__name__}: {exc} (rerun with --debug for the traceback)", file=sys.stderr)
        return 1
    return 130  # not reached: _exit_interrupted() leaves the process
