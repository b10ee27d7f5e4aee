"""genlab.merging: model merging on torch state dicts and safetensors checkpoints (incl. Hugging Face folders).

Methods (mergekit 0.1.5 names and arithmetic, bit-identical results): ``linear``, ``task_arithmetic``, ``ties``,
``dare_ties``, ``dare_linear``, ``breadcrumbs``, ``breadcrumbs_ties``, ``della``, ``della_linear``, ``slerp``,
``nuslerp``, ``model_stock``, ``karcher``, ``sce``, ``passthrough``, over ``models`` or ``slices`` (layer
stacking); and genlab's curriculum merge ``cmm`` (rank experts, merge them progressively). See docs/merging.md.

- :func:`merge` / :func:`merge_state_dicts`: in memory.
- :func:`merge_to_folder` (and ``genlab merge CONFIG.yaml --out DIR``): streamed from and to disk.
- :func:`merge_tensor`, :func:`gta_merge`, :func:`linear_merge`, :mod:`genlab.merging.sparsify`: one tensor.
- :mod:`genlab.merging.curriculum`: schedules, ranking, progressive merging.
"""

from importlib import import_module

_HOMES = {  # public name -> the module that defines it; loaded on first use, so `genlab --help` never imports torch
    "SafetensorsSource": "checkpoint", "StateDictSource": "checkpoint", "open_source": "checkpoint",
    "MergeConfig": "config", "load_config": "config", "parse_config": "config",
    "curriculum_order": "curriculum", "effective_weights": "curriculum", "progressive_merge_tensor": "curriculum",
    "schedule_alphas": "curriculum", "task_vector_conflict": "curriculum",
    "merge": "engine", "merge_state_dicts": "engine", "plan_merge": "engine", "run_plan": "engine",
    "CheckpointError": "errors", "MergeConfigError": "errors", "MergeError": "errors",
    "merge_to_folder": "io",
    "METHODS": "methods", "get_method": "methods", "gta_merge": "methods", "linear_merge": "methods",
    "merge_tensor": "methods", "sign_mask": "combine", "sce_merge": "methods",
    "slerp": "geometric", "nuslerp": "geometric", "karcher": "geometric", "model_stock": "geometric",
    "top_k_mask": "sparsify", "model_card": "card",
}  # fmt: skip


def __getattr__(name: str):
    if name not in _HOMES:
        raise AttributeError(f"module 'genlab.merging' has no attribute {name!r}")
    return getattr(import_module(f"genlab.merging.{_HOMES[name]}"), name)


__all__ = [
    "METHODS",
    "CheckpointError",
    "MergeConfig",
    "MergeConfigError",
    "MergeError",
    "SafetensorsSource",
    "StateDictSource",
    "curriculum_order",
    "effective_weights",
    "get_method",
    "gta_merge",
    "karcher",
    "linear_merge",
    "load_config",
    "merge",
    "merge_state_dicts",
    "merge_tensor",
    "merge_to_folder",
    "model_card",
    "model_stock",
    "nuslerp",
    "open_source",
    "parse_config",
    "plan_merge",
    "progressive_merge_tensor",
    "run_plan",
    "sce_merge",
    "schedule_alphas",
    "sign_mask",
    "slerp",
    "task_vector_conflict",
    "top_k_mask",
]
