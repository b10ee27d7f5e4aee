"""genlab.merging: model merging on torch state dicts and safetensors checkpoints (incl. Hugging Face folders).

Methods (mergekit 0.1.5 names and arithmetic, bit-identical results): ``linear``, ``task_arithmetic``, ``ties``,
``dare_ties``, ``dare_linear``, ``breadcrumbs``, ``breadcrumbs_ties``, ``della``, ``della_linear``; and genlab's
curriculum merge ``cmm`` (rank experts, merge them progressively). See docs/merging.md.

- :func:`merge` / :func:`merge_state_dicts`: in memory.
- :func:`merge_to_folder` (and ``genlab merge CONFIG.yaml --out DIR``): streamed from and to disk.
- :func:`merge_tensor`, :func:`gta_merge`, :func:`linear_merge`, :mod:`genlab.merging.sparsify`: one tensor.
- :mod:`genlab.merging.curriculum`: schedules, ranking, progressive merging.
"""

from genlab.merging.checkpoint import SafetensorsSource, StateDictSource, open_source
from genlab.merging.config import MergeConfig, load_config, parse_config
from genlab.merging.curriculum import (
    curriculum_order,
    effective_weights,
    progressive_merge_tensor,
    schedule_alphas,
    task_vector_conflict,
)
from genlab.merging.engine import merge, merge_state_dicts, plan_merge, run_plan
from genlab.merging.errors import CheckpointError, MergeConfigError, MergeError
from genlab.merging.io import merge_to_folder
from genlab.merging.methods import METHODS, get_method, gta_merge, linear_merge, merge_tensor, sign_mask

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
    "linear_merge",
    "load_config",
    "merge",
    "merge_state_dicts",
    "merge_tensor",
    "merge_to_folder",
    "open_source",
    "parse_config",
    "plan_merge",
    "progressive_merge_tensor",
    "run_plan",
    "schedule_alphas",
    "sign_mask",
    "task_vector_conflict",
]
