"""The ``genlab`` console script.

``genlab ifbench ...`` (tools run in pipelines, thousands of times) runs on a root that holds only the ``ifbench``
group (:func:`genlab.ifbench.cli.ifbench_app`), so that it imports neither the other tools nor the study harness;
every other command line runs on :data:`genlab.cli.app`. Both go through the one error path,
:func:`genlab.commandline.run`.
"""

import sys


def main() -> None:
    """The console script. Ctrl-C at any moment, the imports included, is one line and exit code 130, never a
    traceback."""
    try:
        from genlab.commandline import run

        args = sys.argv[1:]
        if next((a for a in args if not a.startswith("-")), None) == "ifbench":
            from genlab.ifbench.cli import ifbench_app

            code = run(ifbench_app(), args)
        else:
            from genlab.cli import app

            code = run(app, args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr, flush=True)
        sys.exit(130)
    if code:
        sys.exit(code)


if __name__ == "__main__":
    main()
