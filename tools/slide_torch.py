#!/usr/bin/python3
"""The outside reference of tools/slide_compare.sh (issue 17): the network of a hetcl model with a
slide layer, trained in PyTorch with a full softmax over every output, on the same LIBSVM files,
printing P@1 against training time.

    tools/slide_torch.py --model models/slide-xc.json --train train.libsvm --test test.libsvm
                         [--epochs 1] [--time SECONDS] [--batch 128] [--lr 5e-3]
                         [--eval-every 0.25] [--test-limit 2000] [--threads 2] [--seed 1]
                         [--out FILE.json]

The network is hetcl's SLIDE trainer's: the input's non-zeros summed through the first layer's
rows (an EmbeddingBag with per-sample weights, as hetcl reads only the rows of the non-zeros),
its bias and ReLU (or none, as the spec says), then the slide layer as a dense Linear over every
output (its bias when the spec has one). Initial weights as hetcl's "auto" initialisers (he_uniform
before a ReLU, else xavier_uniform; zero biases). The loss is hetcl's: -sum_y log p_y / |Y| over an
example's labels Y. The optimiser is hetcl's lazy Adam: SparseAdam for the first layer's rows
(only the rows a batch touched move, as in hetcl), Adam for the rest (beta 0.9/0.999, eps 1e-8),
the same rate. Batches in a random order each epoch; P@1 and P@5 (hits in the top 5 over 5) on the
first --test-limit test examples at every --eval-every epoch and at each epoch's end. Training
time leaves the evaluations out, as hetcl's report does.

The BLAS setting: OPENBLAS_CORETYPE=SkylakeX and OPENBLAS_NUM_THREADS=1 unless the environment
sets them (on this project's Xeons OpenBLAS 0.3.21 falls to Prescott otherwise; tools/blas_env.py
measures the choice), torch.set_num_threads(--threads). Prints one line per evaluation:
"train_s P@1 P@5"; --out writes them as JSON ({"points": [...], "config": {...}}).
"""
import argparse
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_CORETYPE", "SkylakeX")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402  (after the BLAS environment)
import torch  # noqa: E402


def read_libsvm(path, n_features=None):
    """A LIBSVM / Extreme Classification file: (indptr, indices 0-based, values, label lists,
    n_features, n_labels). The XC header line "rows features labels" is taken when present;
    feature indices are 1-based as hetcl reads them."""
    indptr, indices, values, labels = [0], [], [], []
    n_labels = 0
    with open(path) as f:
        first = True
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split()
            if first:
                first = False
                if len(parts) == 3 and all(p.isdigit() for p in parts):
                    n_features = n_features or int(parts[1])
                    n_labels = int(parts[2])
                    continue
            lab_tok = parts[0] if ":" not in parts[0] else ""
            feats = parts[1:] if lab_tok else parts
            labels.append([int(v) for v in lab_tok.split(",")] if lab_tok else [])
            for tok in feats:
                i, v = tok.split(":")
                indices.append(int(i) - 1)
                values.append(float(v))
            indptr.append(len(indices))
    indices = np.asarray(indices, dtype=np.int64)
    if n_features is None:
        n_features = int(indices.max()) + 1 if len(indices) else 0
    n_labels = max(n_labels, 1 + max((max(l) for l in labels if l), default=-1))
    return (np.asarray(indptr, dtype=np.int64), indices, np.asarray(values, dtype=np.float32),
            labels, n_features, n_labels)


class Net(torch.nn.Module):
    def __init__(self, d, hid, c, relu, bias_out):
        super().__init__()
        self.w1 = torch.nn.EmbeddingBag(d, hid, mode="sum", sparse=True)
        self.b1 = torch.nn.Parameter(torch.zeros(hid))
        self.out = torch.nn.Linear(hid, c, bias=bias_out)
        self.relu = relu
        with torch.no_grad():
            a = (6.0 / d) ** 0.5 if relu else (6.0 / (d + hid)) ** 0.5
            self.w1.weight.uniform_(-a, a)
            a = (6.0 / (hid + c)) ** 0.5
            self.out.weight.uniform_(-a, a)
            if bias_out:
                self.out.bias.zero_()

    def forward(self, idx, offsets, val):
        h = self.w1(idx, offsets, per_sample_weights=val) + self.b1
        return self.out(torch.relu(h) if self.relu else h)


def batch_tensors(data, rows):
    indptr, indices, values, labels = data[:4]
    lo, hi = indptr[rows], indptr[rows + 1]
    idx = np.concatenate([indices[a:b] for a, b in zip(lo, hi)]) if len(rows) else indices[:0]
    val = np.concatenate([values[a:b] for a, b in zip(lo, hi)]) if len(rows) else values[:0]
    offsets = np.concatenate([[0], np.cumsum(hi - lo)[:-1]])
    return (torch.from_numpy(idx), torch.from_numpy(offsets.astype(np.int64)),
            torch.from_numpy(val), [labels[r] for r in rows])


def evaluate(net, test, n, batch=512):
    hits1 = hits5 = 0.0
    m = 0
    with torch.no_grad():
        for b in range(0, n, batch):
            rows = np.arange(b, min(n, b + batch))
            idx, off, val, labs = batch_tensors(test, rows)
            top = net(idx, off, val).topk(5, dim=1).indices.numpy()
            for t, lab in zip(top, labs):
                if not lab:
                    continue
                s = set(lab)
                hits1 += t[0] in s
                hits5 += sum(1 for q in t if q in s) / 5.0
                m += 1
    return (hits1 / m, hits5 / m) if m else (0.0, 0.0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--train", required=True)
    ap.add_argument("--test", required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--time", type=float, default=0.0, help="training seconds (0: epochs only)")
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=5e-3)
    ap.add_argument("--eval-every", type=float, default=0.25, help="epochs between evaluations")
    ap.add_argument("--test-limit", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out")
    a = ap.parse_args()

    spec = json.load(open(a.model))
    layers = spec["layers"]
    if len(layers) != 2 or layers[0]["type"] != "dense" or layers[1]["type"] != "slide":
        sys.exit(f"slide_torch.py: {a.model}: expected a dense layer then a slide layer")
    d, hid, c = spec["input"]["shape"][0], layers[0]["units"], layers[1]["units"]
    relu = layers[0].get("activation", "none") == "relu"
    bias_out = layers[1].get("bias", True)

    torch.manual_seed(a.seed)
    torch.set_num_threads(a.threads)
    rng = np.random.default_rng(a.seed)
    train, test = read_libsvm(a.train, d), read_libsvm(a.test, d)
    for name, ds in (("train", train), ("test", test)):
        if ds[4] > d or ds[5] > c:
            sys.exit(f"slide_torch.py: {name}: {ds[4]} features and {ds[5]} labels do not fit "
                     f"{a.model} (input [{d}], {c} outputs)")
    n, n_test = len(train[3]), min(a.test_limit, len(test[3]))
    net = Net(d, hid, c, relu, bias_out)
    sparse = torch.optim.SparseAdam(list(net.w1.parameters()), lr=a.lr, eps=1e-8)
    dense = torch.optim.Adam([net.b1] + list(net.out.parameters()), lr=a.lr, eps=1e-8)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, OPENBLAS_CORETYPE="
          f"{os.environ.get('OPENBLAS_CORETYPE')}, {n} examples, {d} features, {hid} hidden, "
          f"{c} outputs", flush=True)
    print(f"{'train_s':>8} {'epoch':>6} {'P@1':>7} {'P@5':>7}", flush=True)
    points, train_s = [], 0.0
    every = max(1, int(round(a.eval_every * n / a.batch)))
    out_of_time = False
    for ep in range(a.epochs):
        perm = rng.permutation(n)
        for bi, b in enumerate(range(0, n, a.batch)):
            t0 = time.perf_counter()
            idx, off, val, labs = batch_tensors(train, perm[b:b + a.batch])
            target = torch.zeros(len(labs), c)
            for r, lab in enumerate(labs):
                if lab:
                    target[r, lab] = 1.0 / len(set(lab))
            z = net(idx, off, val)
            loss = -(torch.log_softmax(z, dim=1) * target).sum(1).mean()
            sparse.zero_grad()
            dense.zero_grad()
            loss.backward()
            sparse.step()
            dense.step()
            train_s += time.perf_counter() - t0
            out_of_time = a.time > 0 and train_s >= a.time
            last = b + a.batch >= n
            if (bi + 1) % every == 0 or last or out_of_time:
                p1, p5 = evaluate(net, test, n_test)
                epoch = ep + min(n, b + a.batch) / n
                points.append({"train_s": train_s, "epoch": epoch, "p_at_1": p1, "p_at_5": p5})
                print(f"{train_s:8.1f} {epoch:6.2f} {p1:7.4f} {p5:7.4f}", flush=True)
            if out_of_time:
                break
        if out_of_time:
            break
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"points": points,
                       "config": {"model": a.model, "train": a.train, "test": a.test,
                                  "batch": a.batch, "lr": a.lr, "threads": a.threads,
                                  "torch": torch.__version__,
                                  "openblas_coretype": os.environ.get("OPENBLAS_CORETYPE")}},
                      f, indent=1)


if __name__ == "__main__":
    main()
