from dataclasses import dataclass
from typing import Literal

import pytest

from genlab.harness.config import build_config, parse_sets, parse_value, run_hash
from genlab.harness.errors import ConfigError, UnknownStudyError
from genlab.harness.study import get_study


@dataclass
class Cfg:
    n: int = 3
    lr: float = 0.1
    name: str = "a"
    flag: bool = False
    mode: Literal["x", "y"] = "x"
    sizes: tuple[int, ...] = (1, 2)
    maybe: float | None = None


def test_typed_parsing_of_every_kind():
    cfg = build_config(
        Cfg,
        parse_sets(["n=5", "lr=1e-3", "name=b", "flag=true", "mode=y", "sizes=4,5,6", "maybe=none"]),
    )
    assert cfg == Cfg(5, 1e-3, "b", True, "y", (4, 5, 6), None)
    assert build_config(Cfg, {"maybe": "0.5"}).maybe == 0.5
    assert parse_value("1e3", int) == 1000


@pytest.mark.parametrize(
    ("sets", "fragment"),
    [
        (["nn=1"], "unknown config key 'nn'"),
        (["n=1.5"], "n: '1.5' is not a valid int"),
        (["flag=maybe"], "not a boolean"),
        (["mode=z"], "not one of x, y"),
        (["sizes=1,a"], "'a' is not a valid int"),
    ],
)
def test_bad_overrides_are_clear_errors(sets, fragment):
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(")):
        build_config(Cfg, parse_sets(sets))


def test_unknown_key_lists_valid_keys():
    with pytest.raises(ConfigError) as info:
        build_config(Cfg, {"bogus": 1})
    for key in ("flag", "lr", "maybe", "mode", "n", "name", "sizes"):
        assert key in str(info.value)


def test_set_without_equals_and_python_values_are_checked():
    with pytest.raises(ConfigError, match="key=value"):
        parse_sets(["n"])
    with pytest.raises(ConfigError, match="not a valid int"):
        build_config(Cfg, {"n": "x"})
    with pytest.raises(ConfigError, match="not a valid int"):
        build_config(Cfg, {"n": True})
    assert build_config(Cfg, {"lr": 1}).lr == 1.0


def test_presets_validation_and_unknown_names():
    toy = get_study("toy-mean")
    assert toy.config("smoke").n == 50
    assert toy.config("quick").n == 1000
    with pytest.raises(ConfigError, match="no preset 'huge'"):
        toy.config("huge")
    with pytest.raises(ConfigError, match="n must be >= 1"):
        toy.config("quick", {"n": 0})
    with pytest.raises(UnknownStudyError, match="no study named 'nope'; known studies: .*toy-mean"):
        get_study("nope")


def test_hash_depends_on_config_and_seed_only():
    a, b = build_config(Cfg), build_config(Cfg, {"n": 4})
    assert run_hash("s", a, 0) == run_hash("s", build_config(Cfg), 0)
    assert len({run_hash("s", a, 0), run_hash("s", b, 0), run_hash("s", a, 1), run_hash("t", a, 0)}) == 4


def test_misspelt_keys_get_a_suggestion_and_numbers_refuse_booleans():
    with pytest.raises(ConfigError, match="did you mean 'lr'"):
        build_config(Cfg, {"lrr": 0.1})
    with pytest.raises(ConfigError, match="n: True is not a valid int"):
        build_config(Cfg, {"n": True})
    assert build_config(Cfg, {"n": "1e3"}).n == 1000
