import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def toy_on_path(monkeypatch):
    """Make toy_studies importable here and in spawned / Ray worker processes."""
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).strip(os.pathsep))
    import toy_studies  # noqa: F401  (registers the toy studies)
