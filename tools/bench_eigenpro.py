#!/usr/bin/python3
"""EigenPro 2.0 (hetcl train on kernel machine specs) against the baselines of issue 19, each
measured in the same run on the same machine and data; nothing here is hard-coded.

    tools/bench_eigenpro.py sgd [--hetcl build/hetcl] [--data digits|fashion:N] [--epochs 3]
                                [--max-epochs 60] [--scales 0.5,1,2,4,8]
    tools/bench_eigenpro.py svc [--hetcl build/hetcl] [--n 10000] [--epochs 2]

sgd: plain mini-batch SGD against EigenPro at the same batch. EigenPro runs --epochs epochs
with the batch m and step eta its setup computes; the target is its training loss (the square
loss, averaged over each epoch's examples before their steps, the report's train_loss) after
its last epoch. Plain SGD (hetcl train --no-precond: the same kernel machine, no
preconditioner) then runs at the same batch m with steps eta_0 * scale for each --scales, where
eta_0 is the largest step the theory allows without the preconditioner (2 m / (beta + (m - 1)
lambda_1), what --no-precond computes for batch m); each runs until it reaches the target or
--max-epochs. Its best stable step is the one that reaches the target in the fewest epochs (a
step that diverges never does). Printed: epochs to the target of both and the ratio.
Data: sklearn's digits (python3-sklearn's digits.csv.gz, 80/20, inputs / 16) or fashion:N, N
training points of Fashion-MNIST (and its first 2,000 test points).

svc: sklearn's SVC(kernel="rbf", C=1, gamma="scale": what a user would pick) against hetcl's
EigenPro (models/eigenpro-gaussian.json, bandwidth 5 on pixels / 255) on the same --n
Fashion-MNIST training points (the first N of a seeded permutation, written to a CSV both
read) and the full 10,000-point test set. Prints the accuracy and training time of both (hetcl:
setup + epochs, evaluations excluded; SVC: fit) and the ratios. SVC runs single-threaded
(libsvm); hetcl on its host workers (--devices host, --host-workers 2 by default: each step's
kernel blocks shared between them in proportion to their measured speed). --epochs is the
user's choice, given before the run and printed; nothing here looks at the test set to pick it.

Debian's python3-sklearn, with /usr/bin/python3 (apt-get install -y python3-sklearn). sklearn's
libsvm computes the kernel's rows through the system BLAS (libblas.so.3): with Debian's reference
BLAS, SVC's fit took 23.1 s here, with OpenBLAS (apt-get install -y libopenblas0-pthread) 11.6-12.3
s. The BLAS SVC loaded is printed, and a warning when it is the reference one: that baseline is
not at its best.
"""
import argparse
import gzip
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time

FASHION = "/usr/share/datasets/fashion-mnist"
DIGITS = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, n = struct.unpack(">II", data[:8])
    if magic == 2051:
        rows, cols = struct.unpack(">II", data[8:16])
        d = rows * cols
        return [list(data[16 + i * d:16 + (i + 1) * d]) for i in range(n)]
    return list(data[8:8 + n])


def write_csv(path, xs, ys):
    with open(path, "w") as f:
        for x, y in zip(xs, ys):
            f.write(",".join(map(str, x)) + ",%d\n" % y)


def fashion_subset(n_train, n_test, seed, tmp):
    """The first n_train points of a seeded permutation of the training set, and the first
    n_test of the test set, as CSV (label last); returns their paths and the arrays."""
    xtr = read_idx(os.path.join(FASHION, "train-images-idx3-ubyte.gz"))
    ytr = read_idx(os.path.join(FASHION, "train-labels-idx1-ubyte.gz"))
    xte = read_idx(os.path.join(FASHION, "t10k-images-idx3-ubyte.gz"))[:n_test]
    yte = read_idx(os.path.join(FASHION, "t10k-labels-idx1-ubyte.gz"))[:n_test]
    idx = list(range(len(xtr)))
    random.Random(seed).shuffle(idx)
    idx = idx[:n_train]
    xtr, ytr = [xtr[i] for i in idx], [ytr[i] for i in idx]
    tr, te = os.path.join(tmp, "train.csv"), os.path.join(tmp, "test.csv")
    write_csv(tr, xtr, ytr)
    write_csv(te, xte, yte)
    return tr, te, (xtr, ytr, xte, yte)


def hetcl_train(args, model, data_args, extra, tmp, tag):
    report = os.path.join(tmp, tag + ".json")
    cmd = [args.hetcl, "train", "--model", model] + data_args + [
        "--devices", "host", "--host-workers", str(args.host_workers), "--report", report,
        "--quiet"] + extra
    t0 = time.monotonic()
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wall = time.monotonic() - t0
    if r.returncode != 0 and "diverged" in r.stderr:
        return {"diverged": r.stderr.strip()}
    if r.returncode != 0:
        sys.exit("%s: exit %d: %s" % (" ".join(cmd), r.returncode, r.stderr.strip()))
    with open(report) as f:
        doc = json.load(f)
    doc["_wall"] = wall
    return doc


def epochs_to(doc, target):
    for e in doc["epochs"]:
        if e["train_loss"] <= target:
            return e["epoch"]
    return None


def cmd_sgd(args):
    tmp = tempfile.mkdtemp(prefix="bench_eigenpro_")
    if args.data == "digits":
        csv = os.path.join(tmp, "digits.csv")
        with gzip.open(DIGITS, "rt") as f, open(csv, "w") as g:
            g.write(f.read())
        model = os.path.join(ROOT, "models/eigenpro-digits.json")
        data = ["--data", csv, "--label-column", "-1", "--test-split", "0.2"]
    else:
        n = int(args.data.split(":")[1])
        tr, te, _ = fashion_subset(n, 2000, args.seed, tmp)
        model = os.path.join(ROOT, "models/eigenpro-gaussian.json")
        data = ["--data", tr, "--test-data", te, "--label-column", "-1"]
    ep = hetcl_train(args, model, data, ["--epochs", str(args.epochs)], tmp, "eigenpro")
    d = ep["eigenpro"]["devices"][0]
    m, beta, lam1 = d["m"], d["beta"], d["lambda_1"]
    target = ep["epochs"][-1]["train_loss"]
    print("EigenPro: n %d, s %d, q %d, m %d, eta %.4g; lambda_1 %.4g -> %.4g; train loss %s"
          % (ep["config"]["dataset"]["n_train"], d["s"], d["q"], m, d["eta"], lam1,
             d["lambda_1_new"], ", ".join("%.5f" % e["train_loss"] for e in ep["epochs"])))
    print("target: EigenPro's training loss after %d epochs, %.5f" % (args.epochs, target))
    eta0 = 2.0 * m / (beta + (m - 1) * lam1)
    best = None
    for s in [float(v) for v in args.scales.split(",")]:
        eta = eta0 * s
        doc = hetcl_train(args, model, data,
                          ["--no-precond", "--batch", "host=%d" % m, "--lr", "%.17g" % eta,
                           "--epochs", str(args.max_epochs)], tmp, "sgd%g" % s)
        if "diverged" in doc:
            print("SGD m %d, eta %.4g (%.2f x eta_0): %s" % (m, eta, s, doc["diverged"]))
            continue
        e = epochs_to(doc, target)
        losses = [x["train_loss"] for x in doc["epochs"]]
        print("SGD m %d, eta %.4g (%.2f x eta_0): %s; final train loss %.5g, test acc %.4f"
              % (m, eta, s, "target at epoch %d" % e if e else "target not reached in %d epochs"
                 % args.max_epochs, losses[-1], doc["final"]["test_acc"]))
        if e and (best is None or e < best[0]):
            best = (e, eta, s)
    ep_e = epochs_to(ep, target)
    if best:
        print("epochs to training loss %.5f: EigenPro %d, SGD %d (best stable step %.4g = "
              "%.2f x eta_0); ratio %.1fx" % (target, ep_e, best[0], best[1], best[2],
                                             best[0] / ep_e))
    else:
        print("epochs to training loss %.5f: EigenPro %d, SGD more than %d at every step "
              "(ratio > %.1fx)" % (target, ep_e, args.max_epochs, args.max_epochs / ep_e))


def cmd_svc(args):
    from sklearn.svm import SVC
    tmp = tempfile.mkdtemp(prefix="bench_eigenpro_")
    tr, te, (xtr, ytr, xte, yte) = fashion_subset(args.n, 10000, args.seed, tmp)
    model = os.path.join(ROOT, "models/eigenpro-gaussian.json")
    ep = hetcl_train(args, model, ["--data", tr, "--test-data", te, "--label-column", "-1"],
                     ["--epochs", str(args.epochs)], tmp, "eigenpro")
    e = ep["eigenpro"]
    n_train = ep["config"]["dataset"]["n_train"]
    # setup + the epochs' steps (each epoch's examples_per_s is over its steps alone)
    train_s = e["setup_s"] + sum(n_train / x["examples_per_s"] for x in ep["epochs"])
    ep_acc = ep["final"]["test_acc"]
    sc = lambda xs: [[v / 255.0 for v in x] for x in xs]
    xtr_s, xte_s = sc(xtr), sc(xte)
    clf = SVC(kernel="rbf", C=1.0, gamma="scale")
    t0 = time.monotonic()
    clf.fit(xtr_s, ytr)
    svc_s = time.monotonic() - t0
    blas = loaded_blas()
    t0 = time.monotonic()
    svc_acc = sum(int(p == y) for p, y in zip(clf.predict(xte_s), yte)) / len(yte)
    pred_s = time.monotonic() - t0
    devs = e["devices"]
    d = devs[0]
    print("same %d Fashion-MNIST training points (seed %d), the 10,000-point test set"
          % (args.n, args.seed))
    print("hetcl EigenPro (%s, %d epochs as given by --epochs, m %d, q %d): test accuracy "
          "%.2f%%, training %.1f s (setup %.1f s of it), wall %.1f s"
          % ("+".join(x["device"] for x in devs), len(ep["epochs"]), d["m"], d["q"],
             100 * ep_acc, train_s, e["setup_s"], ep["_wall"]))
    for x in devs:
        print("  %s: m_G %d, %.1f%% of the rows (%.1f of a step's %d), %s us per row"
              % (x["device"], x["m_g"], 100 * x.get("share", 1.0), x.get("rows_per_step", d["m"]),
                 d["m"], "%.1f" % (1e6 * x["s_per_row"]) if x.get("s_per_row") else "-"))
    print("sklearn SVC(kernel=\"rbf\", C=1, gamma=\"scale\"): test accuracy %.2f%%, fit %.1f s "
          "(predict %.1f s); BLAS %s" % (100 * svc_acc, svc_s, pred_s, blas or "unknown"))
    if blas and "/blas/" in blas:
        print("warning: SVC ran on the reference BLAS (about 2x slower than OpenBLAS here); "
              "apt-get install libopenblas0-pthread for its best")
    print("accuracy difference %+.2f points; training time ratio SVC / EigenPro %.1fx"
          % (100 * (ep_acc - svc_acc), svc_s / train_s))
    print("CPU: %s; load average before: %s" % (cpu_model(), os.getloadavg()))


def loaded_blas():
    """The BLAS library mapped into this process (sklearn's libsvm calls it), from /proc/self/maps;
    None when none is."""
    try:
        with open("/proc/self/maps") as f:
            for line in f:
                path = line.split()[-1]
                if "libblas" in path or "libopenblas" in path:
                    return os.path.realpath(path)
    except OSError:
        pass
    return None


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("what", choices=["sgd", "svc"])
    p.add_argument("--hetcl", default=os.path.join(ROOT, "build/hetcl"))
    p.add_argument("--host-workers", type=int, default=2)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default="digits")
    p.add_argument("--epochs", type=int, default=None)
    p.add_argument("--max-epochs", type=int, default=60)
    p.add_argument("--scales", default="0.5,1,2,4,8")
    p.add_argument("--n", type=int, default=10000)
    args = p.parse_args()
    if args.epochs is None:
        args.epochs = 3 if args.what == "sgd" else 2
    print("CPU: %s" % cpu_model())
    (cmd_sgd if args.what == "sgd" else cmd_svc)(args)


if __name__ == "__main__":
    main()
