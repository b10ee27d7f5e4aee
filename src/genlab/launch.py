"""The ``genlab`` console script: ``genlab ifbench eval|list|check|setup`` go straight to the IFBench command line
(argparse, no typer/rich import: they are run in pipelines, thousands of times), everything else to
:mod:`genlab.cli`."""

from __future__ import annotations

import sys

FAST = ("eval", "list", "check", "setup")


def main() -> None:
    """Ctrl-C at any moment, the imports included, is one line and exit code 130, never a traceback."""
    try:
        args = sys.argv[1:]
        if len(args) >= 2 and args[0] == "ifbench" and args[1] in FAST:
            from genlab.ifbench.cli import main as ifbench_main

            sys.exit(ifbench_main(args[1:]))
        from genlab.cli import main as full

        full()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr, flush=True)
        sys.exit(130)


if __name__ == "__main__":
    main()
