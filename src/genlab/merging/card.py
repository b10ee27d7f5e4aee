"""The model card (``README.md``) written next to a merge, in the layout of mergekit's ``--write-model-card``: YAML
front matter (Hub base models, tags, library), the method with its reference, the base, the other models, and the
configuration as given."""

from __future__ import annotations

import re

import yaml

from genlab.merging.config import MergeConfig

_HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")  # owner/name, as a Hub reference is written


def model_card(cfg: MergeConfig, config_yaml: str) -> str:
    """README.md text for the merge described by ``cfg`` (its YAML text as given)."""
    method = cfg.method
    title = f"[{method.title}]({method.reference})" if method.reference.startswith("http") else method.title
    base = None if method.name == "slerp" else cfg.base  # mergekit names no base for slerp
    base_text = f" using {base.ref} as a base" if base is not None else ""
    others = "\n".join(f"* {m.ref}" for m in cfg.inputs if m is not base)
    hub = [m.ref for m in cfg.inputs if _HUB_ID.match(m.ref) and not m.path.exists()]
    front = yaml.safe_dump({"base_model": hub, "tags": ["mergekit", "merge", "genlab"], "library_name": "transformers"})
    return (
        f"---\n{front}---\n\n"
        "This is a merge of pre-trained language models created with `genlab merge` (mergekit-compatible).\n\n"
        f"## Merge Details\n### Merge Method\n\nThis model was merged using the {title} merge method{base_text}.\n\n"
        f"### Models Merged\n\nThe following models were included in the merge:\n{others}\n\n"
        "### Configuration\n\nThe following YAML configuration was used to produce this model:\n\n"
        f"```yaml\n{config_yaml.rstrip()}\n```\n"
    )
