import os
from pathlib import Path

import pytest

from genlab.harness import study

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def toy_on_path(monkeypatch):
    """Make toy_studies importable here and in spawned / Ray worker processes."""
    monkeypatch.syspath_prepend(str(HERE))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]).strip(os.pathsep))
    # the toy studies are registered for this test only, so `genlab reproduce` in later tests of the same worker
    # (which spawns workers that cannot import them) never sees them
    original = study._REGISTRY
    registry = dict(original)
    monkeypatch.setattr(study, "_REGISTRY", registry)
    import toy_studies

    for value in vars(toy_studies).values():
        if isinstance(value, type) and issubclass(value, study.Study) and getattr(value, "name", None):
            registry[value.name] = value
    yield
    # shipped studies discovered during the test (discovery imports them once per process) stay registered
    for name, cls in registry.items():
        if cls.__module__.startswith("genlab."):
            original.setdefault(name, cls)
