"""What autodist would do on machines you don't have: a TPU VM, 8 GPUs, one small GPU.

    python examples/dry_run_plans.py

The same works from the shell on a snapshot file: `python -m autodist inspect --json > snap.json`
on the target machine, then `python -m autodist plan --snapshot snap.json --num-params N`.
"""

import autodist
from autodist import GpuInfo, HardwareSnapshot, TpuInfo

GIB = 2**30
machines = {
    "TPU v3-8 VM": HardwareSnapshot.cpu_only(num_cpus=96, tpu=TpuInfo("/dev/accel0", "local", 8)),
    "8x A100 40GB": HardwareSnapshot.cpu_only(num_cpus=96, gpus=tuple(GpuInfo("NVIDIA A100-SXM4-40GB", 40 * GIB, "8.0") for _ in range(8))),
    "1x T4 16GB": HardwareSnapshot.cpu_only(num_cpus=8, gpus=(GpuInfo("Tesla T4", 16 * GIB, "7.5"),)),
}
for name, snapshot in machines.items():
    for num_params in (25_000_000, 2_000_000_000):
        print(f"{name}, {num_params / 1e6:,.0f}M parameters:")
        try:
            plan = autodist.plan(snapshot, num_params=num_params, batch_size=1000)
        except autodist.StrategyUnavailableError as err:  # the model fits no GPU, under any strategy
            print(f"  refused: {err}")
            continue
        print("  " + plan.summary().replace("\n", "\n  "))
