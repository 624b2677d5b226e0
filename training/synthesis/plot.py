"""The kept set's distribution as a figure (operator classes, fusion depth, eager time), drawn from a dataset
summary's `distribution` alone, so the admin page and the benchmark draw the same data."""


class PlotUnavailable(Exception):
    """matplotlib is not installed: `pip install -e '.[train]'` (or `.[test]`) brings it."""


def plot_distribution(summary, path, title=""):
    """Write a PNG of SUMMARY's kept-set distribution to PATH; returns PATH."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise PlotUnavailable("plotting needs matplotlib: pip install -e '.[train]'") from None
    dist = summary["distribution"]
    fig, (classes, depth, eager) = plt.subplots(1, 3, figsize=(15, 4.2))
    names = list(dist["op_classes"])
    classes.barh(names[::-1], [dist["op_classes"][n] for n in names][::-1], color="#4c72b0")
    classes.set_title("operator classes (tasks containing)")
    depths = sorted(dist["fusion_depth"], key=int)
    depth.bar(depths, [dist["fusion_depth"][d] for d in depths], color="#55a868")
    depth.set_title("fusion depth (seeds per task)")
    depth.set_xlabel("seeds")
    values = dist.get("eager_ms_values") or []
    if values:
        import math

        lo, hi = math.log10(max(min(values), 1e-3)), math.log10(max(values))
        bins = [10 ** (lo + (hi - lo + 1e-9) * i / 20) for i in range(21)]
        eager.hist(values, bins=bins, color="#c44e52")
        eager.set_xscale("log")
    eager.set_title("eager time (ms)")
    window = (summary.get("config") or {}).get("window_ms")
    if window:
        for edge in window:
            if edge > 0:
                eager.axvline(edge, color="black", linestyle="--", linewidth=1)
    fig.suptitle(title or f"{summary['kept']} kept of {summary['attempts']} candidates")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
