"""How long this machine takes to touch new memory, one gigabyte at a time (the merge benchmark's noise source).

    python benchmarks/touch_memory.py [GB]

Allocates and fills GB bfloat16 gigabytes in turn and keeps them, printing the seconds each took. On bare metal
every gigabyte costs about the same (page faults and zeroing, ~0.3 s). On a VM whose balloon reports free pages to
the host, only the pages freed in the last seconds are still backed: beyond them every new page faults on the
host too, and a gigabyte can take ten times longer; whichever process touches those pages pays it.
"""

from __future__ import annotations

import sys
import time

import torch


def main(gigabytes: int = 8) -> None:
    torch.set_num_threads(1)
    keep = []
    for i in range(gigabytes):
        start = time.perf_counter()
        block = torch.empty(512 * 2**20, dtype=torch.bfloat16)
        block.fill_(1.0)
        keep.append(block)
        print(f"GB {i}: {time.perf_counter() - start:.2f} s", flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 8)
