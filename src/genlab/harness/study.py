"""The Study contract and the registry of studies.

A study reproduces one paper's claim end to end::

    @register
    class MyStudy(Study):
        name = "my-study"
        paper = Paper("Title", "arXiv:2501.00000")

        @dataclass
        class Config:                # defaults = the `quick` preset
            n: int = 200
            seeds: int = 3

            gap: float = 0.01        # a claim threshold is a config field

        presets = {"smoke": {"n": 20, "seeds": 1}, "quick": {}, "full": {"n": 20000, "seeds": 5}}
        claims = [
            Claim("error-falls", "held-out error falls by more than {gap} from small to large n",
                  lambda m, cfg: m["err/small"] - m["err/big"] > cfg.gap),
        ]

        def run(self, cfg, ctx) -> dict: ...          # returns JSON-able metrics
        def figures(self, metrics, ctx) -> list[Path]: ...   # ctx.save_figure(fig, name, caption)
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from genlab.harness.claims import Claim, Verdict, finalize
from genlab.harness.config import build_config
from genlab.harness.errors import ConfigError, UnknownStudyError

if TYPE_CHECKING:
    from genlab.harness.context import RunContext

PRESETS = ("smoke", "quick", "full")


@dataclass(frozen=True)
class Paper:
    title: str
    arxiv: str
    authors: str = ""

    @property
    def url(self) -> str:
        ident = self.arxiv.removeprefix("arXiv:").strip()
        return f"https://arxiv.org/abs/{ident}" if ident and ident[0].isdigit() else ""


class Study:
    """Base class of every study. Subclasses set the class attributes and implement ``run``."""

    name: ClassVar[str]
    paper: ClassVar[Paper]
    Config: ClassVar[type]
    presets: ClassVar[dict[str, dict[str, Any]]] = {"smoke": {}, "quick": {}, "full": {}}
    claims: ClassVar[list[Claim]] = []
    summary: ClassVar[str] = ""
    headline: ClassVar[tuple[str, ...]] = ()  # metric paths a sweep tabulates by default, beside the claims
    # True when ``run`` puts its models and tensors on ``ctx.device``; a study that does not runs on the CPU
    # whatever --device asks, and the run records (and warns) that it did
    accelerated: ClassVar[bool] = False

    def run(self, cfg: Any, ctx: RunContext) -> dict[str, Any]:
        raise NotImplementedError(f"{type(self).__name__}.run")

    def figures(self, metrics: Mapping[str, Any], ctx: RunContext) -> list[Path]:
        return []

    # -- helpers the harness uses -------------------------------------------------------------
    @classmethod
    def config(cls, preset: str = "quick", overrides: Mapping[str, Any] | None = None) -> Any:
        if preset not in cls.presets:
            raise ConfigError(f"study {cls.name!r} has no preset {preset!r}; presets: {', '.join(cls.presets)}")
        return build_config(cls.Config, cls.presets[preset], overrides or {})

    @classmethod
    def verdicts(cls, metrics: Mapping[str, Any], cfg: Any) -> list[Verdict]:
        """Each claim's verdict on one run, Holm-corrected over the study's empirical claims."""
        return finalize([c.evaluate(metrics, cfg) for c in cls.claims])

    @classmethod
    def claim(cls, key: str) -> Claim | None:
        return next((c for c in cls.claims if c.key == key), None)


_REGISTRY: dict[str, type[Study]] = {}
_DISCOVERED = False


def register(cls: type[Study]) -> type[Study]:
    """Class decorator: add a study to the registry under ``cls.name``."""
    for attr in ("name", "paper", "Config"):
        if not hasattr(cls, attr):
            raise TypeError(f"study {cls.__name__} must define {attr!r}")
    missing = [p for p in PRESETS if p not in cls.presets]
    if missing:
        raise TypeError(f"study {cls.name!r} lacks presets {missing}")
    _check_claims(cls)
    existing = _REGISTRY.get(cls.name)
    if existing is not None and existing.__qualname__ != cls.__qualname__:
        raise TypeError(f"two studies are named {cls.name!r}: {existing.__qualname__} and {cls.__qualname__}")
    _REGISTRY[cls.name] = cls
    return cls


def _check_claims(cls: type[Study]) -> None:
    """Keys are unique, every claim's text formats from the study's config fields, and preconditions
    (``requires``) name earlier claims."""
    keys = [c.key for c in cls.claims]
    dup = sorted({k for k in keys if keys.count(k) > 1})
    if dup:
        raise TypeError(f"study {cls.name!r} repeats claim keys {dup}")
    names = set(getattr(cls.Config, "__dataclass_fields__", {}))
    for i, c in enumerate(cls.claims):
        earlier = keys[:i]
        if bad := [k for k in c.requires if k not in earlier]:
            raise TypeError(f"study {cls.name!r}, claim {c.key!r}: requires {bad}, which are not earlier claims")
        unknown = [f for f in c.fields() if f not in names]
        if unknown:
            raise TypeError(f"study {cls.name!r}, claim {c.key!r}: text names unknown config fields {unknown}")


def discover() -> None:
    """Import every module under ``genlab.studies`` so their ``@register`` runs (once)."""
    global _DISCOVERED
    if _DISCOVERED:
        return
    import genlab.studies as pkg

    for mod in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
        if not mod.name.rsplit(".", 1)[-1].startswith("_"):
            importlib.import_module(mod.name)
    _DISCOVERED = True


def typical_seconds(name: str) -> dict[str, float] | None:
    """Wall seconds of a study's smoke and quick presets on 2 cores, as last measured for the release
    (``genlab/studies/typical_times.json``, written by ``benchmarks/study_times.py``); None if not measured."""
    import json
    from importlib.resources import files

    path = files("genlab.studies") / "typical_times.json"
    if not path.is_file():
        return None
    return json.loads(path.read_text()).get(name)


def registered() -> dict[str, type[Study]]:
    """The studies registered so far in this process, without discovering (importing) the shipped ones."""
    return dict(sorted(_REGISTRY.items()))


def all_studies() -> dict[str, type[Study]]:
    discover()
    return dict(sorted(_REGISTRY.items()))


def get_study(name: str) -> type[Study]:
    studies = all_studies()
    if name not in studies:
        raise UnknownStudyError(f"no study named {name!r}; known studies: {', '.join(studies) or '(none)'}")
    return studies[name]
