"""genlab list / show read a generated catalog instead of importing every study: it must match the code."""

import json
import subprocess
import sys

from genlab.harness.catalog import build, load


def test_the_shipped_catalog_matches_the_studies_code():
    shipped, current = load(), json.loads(json.dumps(build(), sort_keys=True))
    stale = sorted(k for k in set(shipped) | set(current) if shipped.get(k) != current.get(k))
    assert not stale, f"genlab/studies/catalog.json is stale for {stale}: run `python -m genlab.harness.catalog`"


def test_list_and_show_do_not_import_the_studies_or_torch():
    code = (
        "import sys; from genlab.cli import main\n"
        "try:\n    main(['list', '--json'])\nexcept SystemExit:\n    pass\n"
        "try:\n    main(['show', 'phi-curve', '--json'])\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in sys.modules if m == 'torch' or m.startswith('genlab.studies.')]\n"
        "print('IMPORTED', bad, file=sys.stderr)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "IMPORTED []" in out.stderr, out.stderr[-2000:]
    assert '"name": "phi-curve"' in out.stdout
