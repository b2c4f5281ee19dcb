#!/usr/bin/python3
"""tools/slide_compare_summary.py (issue 17) on hand-made reports: which run gives the P@1 target
(hetcl's full softmax after a whole epoch, else PyTorch's after its first epoch, else none), the
time each run took to reach it against a naive linear interpolation, SLIDE's ratio against
PyTorch; and tools/slide_compare.sh's refusal of an unknown option. Runs in well under a second."""
import json
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUMMARY = os.path.join(ROOT, "tools", "slide_compare_summary.py")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def hetcl_report(epochs, n_train, select):
    """epochs: (train_s, p_at_1, examples_per_s) each."""
    return {"epochs": [{"train_s": t, "p_at_1": p, "p_at_5": p / 2, "examples_per_s": r}
                       for t, p, r in epochs],
            "config": {"dataset": {"n_train": n_train}},
            "final": {"examples_per_s": epochs[-1][2]},
            "devices": [{"examples": int(sum(t * r for t, _, r in epochs[:1]))}],
            "slide": {"p_at_1": epochs[-1][1], "candidate_recall": None if select != "lsh" else 0.9,
                      "active_set": {"mean": 100.0 if select != "full" else 1000.0}}}


def summary(reports):
    with tempfile.TemporaryDirectory() as d:
        for name, r in reports.items():
            with open(os.path.join(d, name + ".json"), "w") as f:
                json.dump(r, f)
        return subprocess.run([sys.executable, SUMMARY, d], capture_output=True, text=True,
                              check=True).stdout


def naive_reach(points, target):
    """Straight from the definition: the first evaluation at or above target, the line from the
    one before it (or from (0, 0))."""
    for i, (t, p) in enumerate(points):
        if p >= target:
            t0, p0 = points[i - 1] if i else (0.0, 0.0)
            return t0 + (t - t0) * (target - p0) / (p - p0)
    return None


def reached(out, run):
    m = re.search(rf"^  {run} +([0-9.]+) s$", out, re.M)
    return float(m.group(1)) if m else None


n = 1000
lsh_pts = [(10.0, 0.05), (20.0, 0.12), (30.0, 0.30)]
lsh = hetcl_report([(t, p, 100.0) for t, p in lsh_pts], n, "lsh")
torch_pts = [(25.0, 0.25, 0.04), (50.0, 0.5, 0.08), (75.0, 0.75, 0.13), (100.0, 1.0, 0.20)]
torch = {"points": [{"train_s": t, "epoch": e, "p_at_1": p, "p_at_5": p / 2}
                    for t, e, p in torch_pts]}

# hetcl's full softmax finished its first epoch (10 examples/s for 100 s): its P@1 is the target
full = hetcl_report([(100.0, 0.10, 10.0)], n, "full")
out = summary({"lsh": lsh, "full": full, "torch": torch})
check("target P@1 0.1000: hetcl's full softmax after epoch 1" in out, "target from full")
want = naive_reach(lsh_pts, 0.10)
check(abs(reached(out, "lsh") - want) < 0.05, f"lsh reaches 0.10 at {want:.2f} s")

# a full run cut part way through its epoch gives no target; PyTorch's first epoch does (0.20)
cut = hetcl_report([(100.0, 0.10, 5.0)], n, "full")
out = summary({"lsh": lsh, "full": cut, "torch": torch})
check("target P@1 0.2000: PyTorch's full softmax after epoch 1" in out, "target from torch")
want_l = naive_reach(lsh_pts, 0.20)
want_t = naive_reach([(t, p) for t, _, p in torch_pts], 0.20)
check(abs(reached(out, "lsh") - want_l) < 0.05, f"lsh reaches 0.20 at {want_l:.2f} s")
check(abs(reached(out, "torch") - want_t) < 0.05, f"torch reaches 0.20 at {want_t:.2f} s")
check(f"SLIDE reached it {want_t / want_l:.2f}x sooner" in out, "the ratio torch/lsh")

# no full run and a PyTorch run that never finished an epoch: no target, no ratio
short = {"points": torch["points"][:2]}
out = summary({"lsh": lsh, "torch": short})
check("no P@1 target" in out and "sooner" not in out, "no target without a dense epoch")

# SLIDE that never reaches PyTorch's target: said so, no ratio
slow = hetcl_report([(10.0, 0.01, 100.0)], n, "lsh")
out = summary({"lsh": slow, "torch": torch})
check("lsh      not reached" in out and "SLIDE reached it" not in out, "lsh not reached")

p = subprocess.run([os.path.join(ROOT, "tools", "slide_compare.sh"), "-x"], capture_output=True,
                   text=True)
check(p.returncode == 2 and "usage: tools/slide_compare.sh" in p.stderr and "-F" in p.stderr,
      "slide_compare.sh -x: usage, exit 2")

sys.exit(1 if failures else 0)
