"""`--plot FILE.png`: GPU utilisation over time per variant, and the main metrics side by side.
matplotlib is an optional extra (`pip install 'kube-rdma[plot]'`)."""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kube_rdma.core.config_file import ConfigError

INSTALL = "--plot needs matplotlib: pip install 'kube-rdma[plot]' (or pip install matplotlib)"


def check_plotting(path: Path | None = None) -> None:
    """Before a run: raises ConfigError saying what to install when matplotlib is missing, and
    what is wrong with `path` when the chart could not be written there (no such folder, not
    writable, a format matplotlib does not write)."""
    if importlib.util.find_spec("matplotlib") is None:
        raise ConfigError(INSTALL)
    if path is None:
        return
    folder = path.parent
    if not folder.is_dir():
        raise ConfigError(
            f"--plot {path}: there is no folder {folder}; create it, or give a path in one"
        )
    if path.is_dir():
        raise ConfigError(f"--plot {path}: is a folder; give a file name, e.g. {path}/chart.png")
    if not os.access(folder, os.W_OK):
        raise ConfigError(f"--plot {path}: folder {folder} is not writable; give another path")
    suffix = path.suffix.removeprefix(".").lower()
    if suffix:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib.backend_bases import FigureCanvasBase

        formats = sorted(FigureCanvasBase.get_supported_filetypes())
        if suffix not in formats:
            raise ConfigError(
                f"--plot {path}: matplotlib does not write .{suffix} files; end the name with "
                f"one of .{', .'.join(formats)} (.png is the usual)"
            )


def plot(document: dict[str, Any], path: Path) -> None:
    check_plotting()
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot

    variants = document["variants"]
    figure, (over_time, bars) = pyplot.subplots(1, 2, figsize=(13, 4.5))
    for variant in variants:
        hours = [h for h, _ in variant["utilisation"]["series"]]
        shares = [100 * s for _, s in variant["utilisation"]["series"]]
        over_time.step(hours, shares, where="post", label=variant["name"])
    over_time.set(xlabel="simulated hours", ylabel="GPUs in use (%)", title="GPU utilisation")
    over_time.legend()
    metrics: dict[str, Callable[[dict[str, Any]], float]] = {
        "jobs placed %": lambda v: 100 * v["jobs_placed"] / max(v["jobs"], 1),
        "gangs in one leaf %": lambda v: 100 * v["gangs_in_one_domain"] / max(v["gangs_placed"], 1),
        "GPUs at PIX %": lambda v: (
            100 * v["gpu_nic_levels"]["PIX"] / max(sum(v["gpu_nic_levels"].values()), 1)
        ),
        "idle GPU-h in partial gangs": lambda v: v["partial_gangs"]["idle_gpu_hours"],
    }
    width = 0.8 / max(len(variants), 1)
    for i, variant in enumerate(variants):
        xs = [m + i * width for m in range(len(metrics))]
        bars.bar(xs, [f(variant) for f in metrics.values()], width, label=variant["name"])
    bars.set_xticks([m + 0.4 - width / 2 for m in range(len(metrics))], list(metrics), fontsize=8)
    bars.set_title("per variant")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
