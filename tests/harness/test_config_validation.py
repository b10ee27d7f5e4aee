"""Bad config values are one clear error before anything runs: declared ranges, finiteness, choices."""

import dataclasses
import math
from typing import Annotated

import pytest

from genlab.harness.config import Range, build_config, field_ranges, field_types, scalar_type
from genlab.harness.errors import ConfigError
from genlab.harness.runner import RunSpec, resolve
from genlab.harness.study import all_studies


@dataclasses.dataclass
class Cfg:
    n: Annotated[int, Range(1, 100)] = 10
    sizes: Annotated[tuple[int, ...], Range(2, None)] = (2, 3)
    lr: float = 0.1
    offset: Annotated[int, Range()] = -3
    count: int = 0


def test_declared_and_default_ranges():
    assert build_config(Cfg, {}).offset == -3
    for bad, message in (
        ({"n": 0}, "below its minimum 1"),
        ({"n": 101}, "above its maximum 100"),
        ({"sizes": (2, 1)}, "below its minimum 2"),
        ({"lr": float("nan")}, "not a finite number"),
        ({"lr": "inf"}, "not a finite number"),
        ({"count": -1}, "below its minimum 0"),  # ints are non-negative unless a Range says otherwise
    ):
        with pytest.raises(ConfigError, match=message):
            build_config(Cfg, bad)


def test_seed_and_device_are_checked_before_a_run():
    with pytest.raises(ConfigError, match="--seed"):
        resolve(RunSpec("toy-mean", "smoke", seed=-1))
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(ConfigError, match="no CUDA device"):
            resolve(RunSpec("toy-mean", "smoke", device="cuda"))
    with pytest.raises(ConfigError, match="--device must be"):
        resolve(RunSpec("toy-mean", "smoke", device="tpu"))


def _bad_values(scalar: type, rng: Range) -> list:
    bad = [math.nan] if scalar is float else []
    if rng.lo is not None:
        bad.append(scalar(rng.lo) - 1)
    return bad


@pytest.mark.parametrize("name", sorted(all_studies()))
def test_every_study_rejects_non_finite_floats_and_out_of_range_numbers(name):
    cls = all_studies()[name]
    quick = cls.config("quick")
    types = field_types(cls.Config)
    for key, rng in field_ranges(cls.Config).items():
        default, scalar = getattr(quick, key), scalar_type(types[key])
        for bad in _bad_values(scalar, rng):
            value = (bad,) * len(default) if isinstance(default, tuple) else bad
            if value == ():
                continue
            with pytest.raises(ConfigError):
                cls.config("quick", {key: value})


def test_choices_are_literals():
    with pytest.raises(ConfigError, match="is not one of"):
        all_studies()["dit-locality"].config("quick", {"dataset": "bogus"})
    with pytest.raises(ConfigError, match="above its maximum"):
        all_studies()["margin-bounds"].config("quick", {"n_test": "1e12"})
