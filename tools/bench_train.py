#!/usr/bin/python3
"""Trains the same model with the same hyper-parameters in PyTorch and with each hetcl
algorithm, on the same machine in one run, and prints the throughput ratio and the
time-to-target ratio (issue 5).

    tools/bench_train.py [--hetcl build/hetcl] [--epochs 10] [--algos adaptive,hogbatch,...]
                         [--target 0.85] [--eval-every 0.1] [--seeds N] [--out DIR]
                         [--torch-threads 2] [--blas-dir DIR] [--blas-coretype NAME]
    tools/bench_train.py --model models/lenet.json --devices host --algos adaptive,hogwild

The PyTorch baseline: Debian's python3-torch with /usr/bin/python3, 2 threads, run with
OPENBLAS_NUM_THREADS=1 and the OPENBLAS_CORETYPE that runs SGEMM fastest on this machine,
chosen by measurement before the run (tools/blas_env.py, issue 14: the exported Haswell costs
AVX-512 CPUs half their speed, and OpenBLAS 0.3.21's own detection falls to Prescott, 5x slower,
on family 6 model 207 Xeons) or forced with --blas-coretype NAME (or unset). The choice, the
SGEMM figures of every candidate, the core OpenBLAS runs and the CPU model are printed and
stored in summary.json ("openblas"). The hetcl runs inherit the same environment. Model:
models/mlp.json (784-256-128-10, ReLU, he_uniform weights, xavier_uniform output layer, zero
biases), or with --model a spec with conv2d/pool/flatten layers (models/lenet.json), built
layer by layer from the spec (model_from_spec); data: Fashion-MNIST standardized per feature with the training set's statistics;
SGD with momentum and weight decay as hetcl's (PyTorch's convention), batch --batch.

Both sides evaluate the full test set at the same points: every --eval-every epochs (default
0.1; hetcl train --eval-every, which drains the devices first) and at each epoch's end. Times
are counted from the first batch. The time to the target accuracy ("t85") is training time,
the evaluations left out on both sides, interpolated linearly between the two evaluations
around the crossing; the wall-clock figure with the evaluations included is printed too
("wall t85"). Throughput (examples/s) is on training time as well. With --seeds N every
configuration runs N times (seeds interleaved); the table gives medians with min-max, and the
ratios are of the medians (a seed does not pair a PyTorch run with a hetcl run). Under it, the
cache-line round trip hetcl recorded before and after each run (provenance.host.
core_round_trip_ns) shows the runs that met distant cores on a virtual machine. Nothing here
is hard-coded: every figure is measured in this run.
"""
import argparse
import gzip
import json
import os
import struct
import subprocess
import time

import blas_env

DATA = os.environ.get("HETCL_DATA_DIR", "/usr/share/datasets") + "/fashion-mnist"


def load_idx(images, labels):
    import numpy as np
    with gzip.open(images, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
        x = np.frombuffer(f.read(), dtype=np.uint8).reshape(n, rows * cols)
    with gzip.open(labels, "rb") as f:
        magic, n2 = struct.unpack(">II", f.read(8))
        y = np.frombuffer(f.read(), dtype=np.uint8)
    return x.astype(np.float32) / 255.0, y.astype(np.int64)


def model_from_spec(spec):
    """The PyTorch model of a hetcl spec with conv2d, pools, flatten and dense layers (models/
    README.md): the same shapes, activations and initialisers ("auto": he_uniform before a
    ReLU, xavier_uniform otherwise; biases zeros or normal(init.std)). Rows of the data are
    flat; a [c, h, w] input is unflattened channel-major, as hetcl reads it."""
    import torch
    nn = torch.nn

    def pair(v):
        return (v, v) if isinstance(v, int) else tuple(v)

    init = spec.get("init", {})
    shape = list(spec["input"]["shape"])
    mods = [nn.Unflatten(1, tuple(shape))] if len(shape) == 3 else []
    for layer in spec["layers"]:
        t, act = layer["type"], layer.get("activation", "none")
        if t == "conv2d":
            k, s, p = pair(layer["kernel"]), pair(layer.get("stride", 1)), pair(layer.get("padding", 0))
            m = nn.Conv2d(shape[0], layer["filters"], k, s, p, bias=layer.get("bias", True))
            shape = [layer["filters"], (shape[1] + 2 * p[0] - k[0]) // s[0] + 1,
                     (shape[2] + 2 * p[1] - k[1]) // s[1] + 1]
        elif t in ("maxpool2d", "avgpool2d"):
            k = pair(layer["size"])
            s = pair(layer.get("stride", layer["size"]))
            m = (nn.MaxPool2d if t == "maxpool2d" else nn.AvgPool2d)(k, s)
            shape = [shape[0], (shape[1] - k[0]) // s[0] + 1, (shape[2] - k[1]) // s[1] + 1]
        elif t == "flatten":
            m = nn.Flatten()
            shape = [shape[0] * shape[1] * shape[2]]
        elif t == "dense":
            m = nn.Linear(shape[0], layer["units"], bias=layer.get("bias", True))
            shape = [layer["units"]]
        else:
            raise SystemExit(f"bench_train: {t} layers have no PyTorch equivalent here")
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            name = layer.get("init", init.get("default", "auto"))
            if name == "auto":
                name = "he_uniform" if act == "relu" else "xavier_uniform"
            with torch.no_grad():
                {"he_uniform": lambda w: nn.init.kaiming_uniform_(w, a=0, nonlinearity="relu"),
                 "he_normal": lambda w: nn.init.kaiming_normal_(w, a=0, nonlinearity="relu"),
                 "xavier_uniform": nn.init.xavier_uniform_,
                 "xavier_normal": nn.init.xavier_normal_,
                 "normal": lambda w: nn.init.normal_(w, 0.0, init.get("std", 0.01)),
                 "zeros": nn.init.zeros_}[name](m.weight)
                if m.bias is not None:
                    if init.get("bias", "zeros") == "normal":
                        nn.init.normal_(m.bias, 0.0, init.get("std", 0.01))
                    else:
                        nn.init.zeros_(m.bias)
        mods.append(m)
        if act != "none":
            mods.append({"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}[act]())
    return nn.Sequential(*mods)


def torch_baseline(args):
    """Returns a dict like hetcl's report: per-epoch wall/acc, examples/s, time to target."""
    import numpy as np
    import torch
    torch.set_num_threads(args.torch_threads)
    torch.manual_seed(args.seed)
    xtr, ytr = load_idx(DATA + "/train-images-idx3-ubyte.gz", DATA + "/train-labels-idx1-ubyte.gz")
    xte, yte = load_idx(DATA + "/t10k-images-idx3-ubyte.gz", DATA + "/t10k-labels-idx1-ubyte.gz")
    mean = xtr.mean(axis=0, dtype=np.float64).astype(np.float32)
    std = xtr.std(axis=0, dtype=np.float64).astype(np.float32)
    std[std == 0] = 1
    xtr = (xtr - mean) / std
    xte = (xte - mean) / std
    xtr, ytr = torch.from_numpy(xtr), torch.from_numpy(ytr)
    xte, yte = torch.from_numpy(xte), torch.from_numpy(yte)
    with open(args.model) as f:
        spec = json.load(f)
    if any(layer["type"] != "dense" for layer in spec["layers"]):
        model = model_from_spec(spec)  # LeNet and other conv specs
    else:
        model = torch.nn.Sequential(torch.nn.Linear(784, 256), torch.nn.ReLU(),
                                    torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                    torch.nn.Linear(128, 10))
        with torch.no_grad():  # the spec's initialisers
            for i, m in enumerate(model):
                if isinstance(m, torch.nn.Linear):
                    if m.out_features == 10:
                        torch.nn.init.xavier_uniform_(m.weight)
                    else:
                        torch.nn.init.kaiming_uniform_(m.weight, a=0, nonlinearity="relu")
                    torch.nn.init.zeros_(m.bias)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum,
                          weight_decay=args.weight_decay)
    loss_fn = torch.nn.CrossEntropyLoss()
    n = xtr.shape[0]
    import math
    epochs, points, eval_s = [], [], 0.0
    t0 = time.perf_counter()

    def evaluate(at):
        nonlocal eval_s
        v0 = time.perf_counter()
        model.eval()
        with torch.no_grad():
            acc = (model(xte).argmax(1) == yte).float().mean().item()
        model.train()
        v1 = time.perf_counter()
        eval_s += v1 - v0
        points.append({"epoch": at, "wall_s": v1 - t0, "train_s": v1 - t0 - eval_s,
                       "test_acc": acc})
        return acc

    step = args.eval_every if 0 < args.eval_every < 1 else 1.0
    for epoch in range(args.epochs):
        perm = torch.randperm(n)
        model.train()
        total = 0.0
        next_eval = step
        for i in range(0, n, args.batch):
            idx = perm[i:i + args.batch]
            if args.schedule == "cosine":  # as hetcl: continuous in epochs, per batch
                t = epoch + i / n
                for g in opt.param_groups:
                    g["lr"] = args.lr * 0.5 * (1 + math.cos(math.pi * t / args.epochs))
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(model(xtr[idx]), ytr[idx])
            loss.backward()
            opt.step()
            total += loss.item() * len(idx)
            done = min(i + args.batch, n) / n
            if done < 1 and done >= next_eval:  # mid-epoch, as hetcl's --eval-every
                evaluate(epoch + done)
                next_eval = (int(done / step + 1e-9) + 1) * step
        acc = evaluate(epoch + 1)
        epochs.append({"epoch": epoch + 1, "wall_s": points[-1]["wall_s"], "test_acc": acc,
                       "train_loss": total / n})
        print(f"  torch epoch {epoch + 1}: loss {total / n:.4f} acc {100 * acc:.2f}% "
              f"wall {points[-1]['wall_s']:.1f} s", flush=True)
    return summarise(args, points, epochs[-1]["test_acc"], points[-1]["wall_s"],
                     n * args.epochs / points[-1]["train_s"])


def time_to(points, target, key):
    """The time (points[key]) at which test_acc first reached target, interpolated linearly
    between the evaluation before (or the start: time 0, accuracy 0) and the one after."""
    prev_t, prev_a = 0.0, 0.0
    for p in points:
        if p["test_acc"] >= target:
            f = (target - prev_a) / (p["test_acc"] - prev_a) if p["test_acc"] > prev_a else 1.0
            return prev_t + (p[key] - prev_t) * min(1.0, max(0.0, f))
        prev_t, prev_a = p[key], p["test_acc"]
    return None


def summarise(args, points, final_acc, wall_s, examples_per_s):
    at = next((p for p in points if p["test_acc"] >= args.target), None)
    return {"final_acc": final_acc, "wall_s": wall_s, "examples_per_s": examples_per_s,
            "time_to_target_s": time_to(points, args.target, "train_s"),
            "wall_time_to_target_s": time_to(points, args.target, "wall_s"),
            "target_at_epoch": at["epoch"] if at else None,
            "curve": [[round(p["epoch"], 3), round(p["test_acc"], 4)] for p in points]}


def hetcl_run(args, algo):
    report = os.path.join(args.out, f"train-{algo}-seed{args.seed}.json")
    cmd = [args.hetcl, "train", "--model", args.model, "--data", "fashion-mnist",
           "--algo", algo, "--epochs", str(args.epochs), "--lr", str(args.lr),
           "--lr-batch", str(args.batch), "--momentum", str(args.momentum),
           "--weight-decay", str(args.weight_decay), "--seed", str(args.seed),
           "--devices", args.devices, "--schedule", args.schedule, "--report", report,
           "--quiet"]
    if 0 < args.eval_every < 1:
        cmd += ["--eval-every", str(args.eval_every)]
    if algo == "single":
        cmd += ["--batch", f"host={args.batch}"]
    cmd += args.hetcl_args
    print("  $ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    with open(report) as f:
        r = json.load(f)
    out = summarise(args, r["evaluations"], r["final"]["test_acc"], r["final"]["wall_s"],
                    r["final"]["examples_per_s"])
    out["shares"] = {d["id"]: round(d["update_share"], 3) for d in r["devices"]}
    core = r["provenance"]["host"].get("core_round_trip_ns")
    out["core_round_trip_ns"] = [round(core["before"]["median"]),
                                 round(core["after"]["median"])] if core else None
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hetcl", default="build/hetcl")
    p.add_argument("--model", default="models/mlp.json")
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--lr", type=float, default=0.02)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--weight-decay", type=float, default=0.0)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--seeds", type=int, default=1,
                   help="repeat every run with seeds --seed .. --seed+N-1 (interleaved) and "
                   "report medians: the time to a target accuracy varies a lot between seeds")
    p.add_argument("--schedule", choices=["constant", "cosine"], default="constant",
                   help="learning-rate schedule of both sides (cosine: per batch, to 0 at the end)")
    p.add_argument("--target", type=float, default=0.85)
    p.add_argument("--eval-every", type=float, default=0.1,
                   help="epochs between test evaluations inside an epoch, both sides "
                   "(1: at epoch ends only)")
    p.add_argument("--algos", default="adaptive,hogbatch,hogwild,sync,single")
    p.add_argument("--devices", default="all")
    p.add_argument("--torch-threads", type=int, default=2)
    p.add_argument("--out", default="/tmp/hetcl-bench-train")
    p.add_argument("--skip-torch", action="store_true")
    p.add_argument("--blas-dir", help="directory with a libblas.so.3 for PyTorch (e.g. OpenBLAS "
                   "extracted with apt-get download libopenblas0-pthread && dpkg -x): Debian's "
                   "torch otherwise runs on whatever libblas.so.3 is installed, often the "
                   "reference BLAS")
    p.add_argument("--blas-coretype", metavar="NAME",
                   help="OPENBLAS_CORETYPE for PyTorch (or unset), instead of the fastest measured")
    p.add_argument("hetcl_args", nargs="*", help="extra flags for hetcl train (after --)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    # Re-executes the script once with OPENBLAS_NUM_THREADS=1, the chosen core type and
    # --blas-dir on LD_LIBRARY_PATH: OpenBLAS reads them when it loads.
    blas = blas_env.prepare({"OPENBLAS_NUM_THREADS": "1"}, args.blas_dir, args.blas_coretype,
                            measure=not args.skip_torch, tag="bench_train")
    if not args.skip_torch:
        import torch
        print("torch " + torch.__version__ + ", BLAS: " +
              next((l.strip() for l in open("/proc/self/maps") if "blas" in l and ".so" in l),
                   "?").split()[-1] + ", " + blas_env.in_use(blas), flush=True)
    load = os.getloadavg()[0]
    print(f"load average before: {load:.2f} (timings are noisy when others run)", flush=True)
    results = {}
    first_seed = args.seed
    names = ([] if args.skip_torch else ["pytorch"]) + args.algos.split(",")
    for seed in range(first_seed, first_seed + args.seeds):
        args.seed = seed
        for name in names:
            print(f"{name} seed {seed}" if name == "pytorch" else f"hetcl {name} seed {seed}",
                  flush=True)
            r = torch_baseline(args) if name == "pytorch" else hetcl_run(args, name)
            results.setdefault(name, []).append(r)
    args.seed = first_seed
    base = results.get("pytorch")
    nan = float("nan")

    def med(xs):
        xs = sorted(x for x in xs if x is not None)
        if not xs:
            return None
        return xs[len(xs) // 2] if len(xs) % 2 else (xs[len(xs) // 2 - 1] + xs[len(xs) // 2]) / 2

    def col(runs, key):
        return [r[key] for r in runs]

    def med_time(xs):
        """A run that never reached the target counts as the slowest."""
        m = med([float("inf") if x is None else x for x in xs])
        return None if m is None or m == float("inf") else m

    def fmt(x, spec):
        return format(x, spec) if x is not None else format(nan, spec)

    def spread(xs, spec):
        """median (min-max) of the runs that have a value; "n/a: k" counts those without."""
        known = [x for x in xs if x is not None]
        if not known:
            return "n/a"
        out = f"{format(med(known), spec)} ({format(min(known), spec)}-{format(max(known), spec)})"
        return out + (f" n/a: {len(xs) - len(known)}" if len(known) < len(xs) else "")

    def over_base(x, key):
        b = summary["pytorch"][key] if "pytorch" in summary else None
        return x / b if x is not None and b else None

    tgt = round(100 * args.target)
    # Seeds do not pair runs across frameworks (their randomness differs), so the ratios are
    # of the medians over the seeds, not medians of per-seed ratios.
    print(f"\nmedians over {args.seeds} seed(s) (min-max); ratios: hetcl's median over "
          f"PyTorch's")
    print(f"{'run':10} {'acc':>7} {'ex/s':>8} {'at epoch':>16} {f't{tgt} s':>18} "
          f"{'thr ratio':>9} {f't{tgt} ratio':>9} {f'wall t{tgt} ratio':>14}  shares")
    summary = {}
    for name in (["pytorch"] if base else []) + [n for n in results if n != "pytorch"]:
        runs = results[name]
        row = {"final_acc": med(col(runs, "final_acc")),
               "examples_per_s": med(col(runs, "examples_per_s")),
               "target_at_epoch": med_time(col(runs, "target_at_epoch")),
               "time_to_target_s": med_time(col(runs, "time_to_target_s")),
               "wall_time_to_target_s": med_time(col(runs, "wall_time_to_target_s"))}
        summary[name] = row
        row["throughput_ratio"] = over_base(row["examples_per_s"], "examples_per_s")
        row["time_to_target_ratio"] = over_base(row["time_to_target_s"], "time_to_target_s")
        row["wall_time_to_target_ratio"] = over_base(row["wall_time_to_target_s"],
                                                     "wall_time_to_target_s")
        print(f"{name:10} {fmt(100 * row['final_acc'], '6.2f')}% {row['examples_per_s']:8.0f} "
              f"{spread(col(runs, 'target_at_epoch'), '.1f'):>16} "
              f"{spread(col(runs, 'time_to_target_s'), '.2f'):>18} "
              f"{fmt(row['throughput_ratio'], '9.2f')} {fmt(row['time_to_target_ratio'], '9.2f')} "
              f"{fmt(row['wall_time_to_target_ratio'], '14.2f')}  {runs[-1].get('shares', '')}")
    print("cache-line round trip between the first two CPUs before/after each hetcl run, ns "
          "(on a VM it shows the runs that met distant cores):")
    for name, runs in results.items():
        if name != "pytorch":
            print(f"  {name:10} " + "  ".join(
                "/".join(map(str, r["core_round_trip_ns"])) if r.get("core_round_trip_ns")
                else "n/a" for r in runs))
    print(f"t{tgt}: training time to {100 * args.target:g}% test accuracy (evaluations every "
          f"{args.eval_every:g} epochs, left out); wall t{tgt}: with them")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"load_before": load, "load_after": os.getloadavg()[0], "cpu": blas["cpu"],
                   "openblas": blas, "summary": summary, "runs": results, "args": vars(args)},
                  f, indent=1)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
