"""``chat_template`` in a merge configuration, as mergekit 0.1.5 reads it: ``auto`` (the template most of the
input models carry), the name of one of mergekit's templates (``chatml``, ``llama3``, ``alpaca``, ``mistral``,
``exaone``: the files in ``chat_templates/``, copied from mergekit, see its NOTICE.md), or a Jinja template."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from genlab.merging.errors import MergeConfigError


def template_names() -> list[str]:
    folder = resources.files("genlab.merging").joinpath("chat_templates")
    return sorted(p.name.removesuffix(".jinja") for p in folder.iterdir() if p.name.endswith(".jinja"))


def named_template(name: str) -> str | None:
    """The text of a named template, or None (mergekit's test: under 256 characters, one line, no ``{``)."""
    if len(name) >= 256 or "\n" in name or "{" in name or name not in template_names():
        return None
    return resources.files("genlab.merging").joinpath("chat_templates", f"{name}.jinja").read_text()


def resolve_chat_template(value: str | None, folders: Sequence[Path]) -> str | None:
    """The template text to write (None: keep the donor's)."""
    if not value:
        return None
    if value == "auto":
        found = [t for f in folders if f.is_dir() and (t := template_of(f))]
        return Counter(found).most_common(1)[0][0] if found else None
    text = named_template(value)
    if text is not None:
        return text
    if "{" not in value:
        raise MergeConfigError(f"chat_template {value!r}: give 'auto', a template name ({', '.join(template_names())}) "
                               "or a Jinja template")  # fmt: skip
    return value


def template_of(folder: Path) -> str | None:
    """A model folder's chat template (chat_template.jinja first, as transformers reads it), stripped."""
    if (folder / "chat_template.jinja").exists():
        return (folder / "chat_template.jinja").read_text().strip() or None
    try:
        t = json.loads((folder / "tokenizer_config.json").read_text()).get("chat_template")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(t, list):  # named templates: the default one
        t = next((x.get("template") for x in t if isinstance(x, dict) and x.get("name") == "default"), None)
    return t.strip() if isinstance(t, str) and t.strip() else None
