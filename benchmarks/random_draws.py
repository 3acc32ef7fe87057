"""7. Random draws on 2 replicas (Dropout): how alike the replicas' masks are and what a Dropout
model's validation loss becomes, before (Keras: one seed state for every replica) and after
(autodist's replica_random_streams), each against one device, seed by seed in one process
(benchmarks/_draws.py)."""

from __future__ import annotations


from benchmarks.common import Figure, run_json


def run(quick: bool) -> list[Figure]:
    seeds, epochs = (2, 2) if quick else (8, 6)
    found = run_json(["benchmarks/_draws.py", str(seeds), str(epochs)], timeout=900)
    one = found["one_device"]
    figures = []
    for arm, words in (("before", "Keras"), ("after", "autodist")):
        figures.append(Figure(f"random draws: masks alike between replicas, {words} / one device's halves", "report",
                              [a["agreement"] / o["agreement"] for a, o in zip(found[arm], one)], True,
                              note="share of Dropout(0.5) mask entries equal (1: as one device)"))
        figures.append(Figure(f"random draws: Dropout MLP validation loss, 2 replicas with {words}'s draws / one device", "report",
                              [a["val_loss"] / o["val_loss"] for a, o in zip(found[arm], one)], True,
                              note=f"{epochs} epochs, the same initial weights and seed"))
    again = found["after_again"]
    figures[-1].extra = {"reproducible": again == found["after"][0], "agreement": {arm: [a["agreement"] for a in found[arm]] for arm in ("one_device", "before", "after")}}
    return figures


if __name__ == "__main__":  # python -m benchmarks.random_draws [--quick]
    from benchmarks.run import main_for

    main_for("random_draws")
