"""The token kind's picture: thresholds, token distributions and a simulation's metrics."""

from __future__ import annotations

from fairalloc.plots import beside, pyplot, result_title, save
from fairalloc.result import Result


def equilibrium(problem, result: Result, path: str) -> None:
    """A solved token game (``solve --plot``): its thresholds, token distributions and
    signalling strength, and its simulation's measures when the spec asked for one."""
    alloc = result.allocation
    token_game(problem.ids, alloc.column("thresholds"), alloc.column("token_distribution"),
               result.metrics["boost_probability"], result.metrics.get("simulation"),
               result_title(result), path)


def token_game(ids, thresholds, distribution, boosts, simulation: dict | None, title: str,
               path: str) -> None:
    """The token game: thresholds against tokens per type (Fig. 2 of the token paper), token
    distributions (Fig. 3), signalling strength P_B(t) and, when simulated, performance
    relative to max-welfare (Fig. 11), share uniformity (Fig. 7) and envy-free index (Fig. 9)
    per mechanism."""
    plt = pyplot()
    rows = 2 if simulation else 1
    fig, axes = plt.subplots(rows, 3, figsize=(13, 3.6 * rows), squeeze=False)
    tokens = list(range(len(thresholds[0])))
    width = 0.8 / len(ids)
    for k, uid in enumerate(ids):
        axes[0][0].plot(tokens, thresholds[k], "o-", markersize=3, label=uid)
        axes[0][1].bar([t - 0.4 + (k + 0.5) * width for t in tokens], distribution[k], width,
                       label=uid)
    axes[0][0].set(xlabel="tokens t (count)", ylabel="threshold u_thr(t) (utility)",
                   title="signal thresholds")
    axes[0][1].set(xlabel="tokens t (count)", ylabel="f(t) (share of agents)",
                   title="token distribution")
    for ax in axes[0][:2]:
        ax.grid(alpha=0.3)
    beside(axes[0][1])              # one legend names the types of both panels
    axes[0][2].step(tokens, boosts, where="mid", color="black")
    axes[0][2].set(xlabel="tokens t (count)", ylabel="P_B(t) (probability)",
                   title="signalling strength (eq. 8)", ylim=(-0.05, 1.05))
    axes[0][2].grid(alpha=0.3)
    if simulation:
        names = list(simulation)
        for ax, key, label in zip(axes[1], ("relative_performance", "share_uniformity",
                                            "envy_free_index"),
                                  ("performance ÷ max-welfare's (ratio)",
                                   "share uniformity (0–1)", "envy-free index (0–1)")):
            values = [simulation[n][key] if simulation[n][key] is not None else float("nan")
                      for n in names]
            ax.bar(range(len(names)), values, color="tab:blue")
            ax.set_xticks(range(len(names)), names, fontsize=7, rotation=25)
            ax.set(ylabel=label, ylim=(0, 1.05))
            ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    save(fig, path)
