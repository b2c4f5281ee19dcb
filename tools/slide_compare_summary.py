#!/usr/bin/python3
"""The table that tools/slide_compare.sh prints (issue 17), from the reports its runs left in DIR:
lsh.json (SLIDE), and those of sampled.json, full.json (hetcl train reports) and torch.json
(tools/slide_torch.py) that exist.

    tools/slide_compare_summary.py DIR

Prints P@1 against training time (one row per evaluation), then the P@1 target and the time each
run took to reach it, then one row per hetcl run (epochs, examples/s, active set, candidate
recall, P@1). The target is the dense softmax's P@1 after one whole epoch: hetcl's full softmax's
when that run finished an epoch, else PyTorch's full softmax's (the same dense network; at 200k
outputs hetcl's full softmax runs a few examples/s and does not finish one). The time to reach
it is interpolated linearly between the evaluations around the crossing; "SLIDE reached it Rx
sooner than PyTorch" is torch's time over lsh's.
"""
import json
import os
import sys


def reach(pts, target):
    """Training seconds at which P@1 first reaches target, linear between evaluations."""
    prev = (0.0, 0.0)
    for t, p1, _ in pts:
        if p1 >= target:
            return prev[0] + (t - prev[0]) * (target - prev[1]) / (p1 - prev[1]) \
                if p1 > prev[1] else t
        prev = (t, p1)
    return None


def find_target(runs, torch):
    """(P@1, where it came from) or (None, why not)."""
    full = runs.get("full")
    if full and full["epochs"]:
        ep = full["epochs"][0]
        n_train = full["config"]["dataset"]["n_train"]
        # an epoch's examples: its rate times its training time (a run cut by --time ends early)
        if ep["examples_per_s"] * ep["train_s"] >= 0.999 * n_train:
            return ep["p_at_1"], "hetcl's full softmax after epoch 1"
    if torch:
        whole = [p for p in torch["points"] if p["epoch"] >= 1.0 - 1e-9]
        if whole:
            return whole[0]["p_at_1"], \
                f"PyTorch's full softmax after epoch 1 ({whole[0]['train_s']:.1f} s)"
    return None, "no dense softmax run finished an epoch: no P@1 target"


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: tools/slide_compare_summary.py DIR")
    d = sys.argv[1]
    runs = {n: json.load(open(f"{d}/{n}.json")) for n in ("lsh", "sampled", "full")
            if n == "lsh" or os.path.exists(f"{d}/{n}.json")}
    points = {n: [(e["train_s"], e["p_at_1"], e["p_at_5"]) for e in r["epochs"]]
              for n, r in runs.items()}
    torch = None
    if os.path.exists(f"{d}/torch.json"):
        torch = json.load(open(f"{d}/torch.json"))
        points["torch"] = [(p["train_s"], p["p_at_1"], p["p_at_5"]) for p in torch["points"]]
    print(f"\n{'run':8} {'train s':>8} {'P@1':>7} {'P@5':>7}  (one row per evaluation)")
    for n, pts in points.items():
        for t, p1, p5 in pts:
            print(f"{n:8} {t:8.1f} {p1:7.4f} {p5:7.4f}")
    target, source = find_target(runs, torch)
    if target is None:
        print(f"\n{source}")
    else:
        print(f"\ntarget P@1 {target:.4f}: {source}; time to reach it:")
        times = {n: reach(pts, target) for n, pts in points.items()}
        for n, t in times.items():
            print(f"  {n:8} " + (f"{t:8.1f} s" if t is not None else "not reached"))
        lsh, tt = times.get("lsh"), times.get("torch")
        if lsh and tt:
            print(f"SLIDE reached it {tt / lsh:.2f}x sooner than PyTorch's full softmax "
                  f"({lsh:.1f} s against {tt:.1f} s)")
        elif "torch" in times:
            missed = " nor ".join(n for n, t in (("SLIDE", lsh), ("PyTorch", tt)) if not t)
            print(f"no ratio: {missed} did not reach it")
    full = runs["full"]["slide"]["p_at_1"] if "full" in runs else 0.0
    print(f"\n{'run':8} {'epochs':>7} {'ex/s':>8} {'active':>8} {'cand.recall':>11} {'P@1':>7} "
          f"{'vs full':>8}")
    for n, r in runs.items():
        s, f = r["slide"], r["final"]
        cand = "-" if s["candidate_recall"] is None else f"{s['candidate_recall']:.3f}"
        done = r["devices"][0]["examples"] / max(1, r["config"]["dataset"]["n_train"])
        ratio = f"{s['p_at_1'] / full:.2f}x" if full > 0 else "-"
        print(f"{n:8} {done:7.2f} {f['examples_per_s']:8.0f} {s['active_set']['mean']:8.0f} "
              f"{cand:>11} {s['p_at_1']:7.4f} {ratio:>8}")


if __name__ == "__main__":
    main()
