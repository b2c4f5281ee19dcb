#!/usr/bin/python3
"""Trains the same model with the same hyper-parameters in PyTorch and with each hetcl
algorithm, on the same machine in one run, and prints the throughput ratio and the
time-to-target ratio (issue 5).

    tools/bench_train.py [--hetcl build/hetcl] [--epochs 10] [--algos adaptive,hogbatch,...]
                         [--target 0.85] [--out DIR] [--torch-threads 2]
    tools/bench_train.py --model models/lenet.json --devices host --algos adaptive,hogwild

The PyTorch baseline: Debian's python3-torch with /usr/bin/python3, 2 threads, run with
OPENBLAS_NUM_THREADS=1 and without OPENBLAS_CORETYPE (which otherwise cost it 4-5x). Model:
models/mlp.json (784-256-128-10, ReLU, he_uniform weights, xavier_uniform output layer, zero
biases), or with --model a spec with conv2d/pool/flatten layers (models/lenet.json), built
layer by layer from the spec (model_from_spec); data: Fashion-MNIST standardised per feature with the training set's statistics;
SGD with momentum and weight decay as hetcl's (PyTorch's convention), batch --batch, the
test set evaluated after every epoch. Times: training wall time from the first batch, with
the evaluations included in wall time as hetcl counts them (time to target) and excluded from
throughput (examples/s). Nothing here is hard-coded: every figure is measured in this run.
"""
import argparse
import gzip
import json
import os
import struct
import subprocess
import sys
import time

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
    epochs, train_s, t_target = [], 0.0, None
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        e0 = time.perf_counter()
        perm = torch.randperm(n)
        model.train()
        total = 0.0
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
        train_s += time.perf_counter() - e0
        model.eval()
        with torch.no_grad():
            acc = (model(xte).argmax(1) == yte).float().mean().item()
        wall = time.perf_counter() - t0
        if t_target is None and acc >= args.target:
            prev_w, prev_a = (epochs[-1]["wall_s"], epochs[-1]["test_acc"]) if epochs else (0, 0)
            t_target = prev_w + (wall - prev_w) * (args.target - prev_a) / max(acc - prev_a, 1e-9)
        epochs.append({"epoch": epoch + 1, "wall_s": wall, "test_acc": acc,
                       "train_loss": total / n})
        print(f"  torch epoch {epoch + 1}: loss {total / n:.4f} acc {100 * acc:.2f}% "
              f"wall {wall:.1f} s", flush=True)
    return {"final_acc": epochs[-1]["test_acc"], "wall_s": epochs[-1]["wall_s"],
            "examples_per_s": n * args.epochs / train_s, "time_to_target_s": t_target}


def hetcl_run(args, algo):
    report = os.path.join(args.out, f"train-{algo}.json")
    cmd = [args.hetcl, "train", "--model", args.model, "--data", "fashion-mnist",
           "--algo", algo, "--epochs", str(args.epochs), "--lr", str(args.lr),
           "--lr-batch", str(args.batch), "--momentum", str(args.momentum),
           "--weight-decay", str(args.weight_decay), "--seed", str(args.seed),
           "--devices", args.devices, "--schedule", args.schedule, "--report", report,
           "--quiet"]
    if algo == "single":
        cmd += ["--batch", f"host={args.batch}"]
    cmd += args.hetcl_args
    print("  $ " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)
    with open(report) as f:
        r = json.load(f)
    t = None
    for i, e in enumerate(r["epochs"]):  # interpolated as for the baseline
        if e["test_acc"] >= args.target:
            pw, pa = (r["epochs"][i - 1]["wall_s"], r["epochs"][i - 1]["test_acc"]) if i else (0, 0)
            t = pw + (e["wall_s"] - pw) * (args.target - pa) / max(e["test_acc"] - pa, 1e-9)
            break
    return {"final_acc": r["final"]["test_acc"], "wall_s": r["final"]["wall_s"],
            "examples_per_s": r["final"]["examples_per_s"], "time_to_target_s": t,
            "shares": {d["id"]: round(d["update_share"], 3) for d in r["devices"]}}


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
    p.add_argument("--schedule", choices=["constant", "cosine"], default="constant",
                   help="learning-rate schedule of both sides (cosine: per batch, to 0 at the end)")
    p.add_argument("--target", type=float, default=0.85)
    p.add_argument("--algos", default="adaptive,hogbatch,hogwild,sync,single")
    p.add_argument("--devices", default="all")
    p.add_argument("--torch-threads", type=int, default=2)
    p.add_argument("--out", default="/tmp/hetcl-bench-train")
    p.add_argument("--skip-torch", action="store_true")
    p.add_argument("--blas-dir", help="directory with a libblas.so.3 for PyTorch (e.g. OpenBLAS "
                   "extracted with apt-get download libopenblas0-pthread && dpkg -x): Debian's "
                   "torch otherwise runs on whatever libblas.so.3 is installed, often the "
                   "reference BLAS")
    p.add_argument("hetcl_args", nargs="*", help="extra flags for hetcl train (after --)")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    want_ld = args.blas_dir and os.environ.get("LD_LIBRARY_PATH", "").split(":")[0] != args.blas_dir
    if os.environ.get("OPENBLAS_NUM_THREADS") != "1" or "OPENBLAS_CORETYPE" in os.environ or want_ld:
        env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
        env.pop("OPENBLAS_CORETYPE", None)
        if want_ld:
            env["LD_LIBRARY_PATH"] = args.blas_dir + ":" + env.get("LD_LIBRARY_PATH", "")
        os.execve(sys.executable, [sys.executable] + sys.argv, env)
    if not args.skip_torch:
        import torch
        print("torch " + torch.__version__ + ", BLAS: " +
              next((l.strip() for l in open("/proc/self/maps") if "blas" in l and ".so" in l),
                   "?").split()[-1], flush=True)
    load = os.getloadavg()[0]
    print(f"load average before: {load:.2f} (timings are noisy when others run)", flush=True)
    results = {}
    if not args.skip_torch:
        print("pytorch baseline", flush=True)
        results["pytorch"] = torch_baseline(args)
    for algo in args.algos.split(","):
        print(f"hetcl {algo}", flush=True)
        results[algo] = hetcl_run(args, algo)
    base = results.get("pytorch")
    print(f"\n{'run':10} {'acc':>7} {'wall s':>8} {'ex/s':>9} {'t85 s':>7} "
          f"{'thr ratio':>9} {'t85 ratio':>9}  shares")
    for name, r in results.items():
        thr = r["examples_per_s"] / base["examples_per_s"] if base else float("nan")
        t = r["time_to_target_s"]
        tr = t / base["time_to_target_s"] if base and t and base["time_to_target_s"] else None
        print(f"{name:10} {100 * r['final_acc']:6.2f}% {r['wall_s']:8.1f} "
              f"{r['examples_per_s']:9.0f} {t if t is not None else float('nan'):7.1f} "
              f"{thr:9.2f} {tr if tr is not None else float('nan'):9.2f}  {r.get('shares', '')}")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({"load_before": load, "load_after": os.getloadavg()[0], "results": results,
                   "args": vars(args)}, f, indent=1)
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
