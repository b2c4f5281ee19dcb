#!/usr/bin/python3
"""Writes synthetic extreme-classification data as LIBSVM files (the Extreme Classification
Repository's format: a header line "rows features labels", then "l1,l2 i:v i:v ..." with 1-based
feature indices), so that tools/slide_compare.sh can train hetcl and PyTorch (tools/slide_torch.py)
on the very same examples.

    tools/slide_xc_libsvm.py OUT_PREFIX [--n 100000] [--test 2000] [--features 100000]
                             [--labels 50000] [--nnz 50] [--labels-min 1] [--labels-max 3]
                             [--prototypes 20] [--noise 0.2] [--seed 1]

writes OUT_PREFIX.train.libsvm and OUT_PREFIX.test.libsvm. The recipe is that of hetcl's
generator (hetcl_dataset_generate_xc, <hetcl/data.h>), drawn with numpy rather than hetcl's PRNG
(so the examples differ from --data xc's, the distribution does not): each label has `prototypes`
uniform feature indices; label popularity follows a power law (floor(labels * u^2)); each example
draws 1 + its label count's worth of labels, then up to 4 * nnz feature draws until it has nnz
distinct ones, each with probability 1 - noise a prototype feature of one of its labels and
otherwise uniform; each draw adds 1 + u; rows are L2-normalised. Test examples come from the same
prototypes.
"""
import argparse

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("prefix")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--test", type=int, default=2000)
    ap.add_argument("--features", type=int, default=100000)
    ap.add_argument("--labels", type=int, default=50000)
    ap.add_argument("--nnz", type=int, default=50)
    ap.add_argument("--labels-min", type=int, default=1)
    ap.add_argument("--labels-max", type=int, default=3)
    ap.add_argument("--prototypes", type=int, default=20)
    ap.add_argument("--noise", type=float, default=0.2)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if min(a.n, a.test, a.features, a.labels, a.nnz, a.labels_min, a.prototypes) < 1 or \
            a.labels_max < a.labels_min or a.labels_max > a.labels or not 0 <= a.noise <= 1:
        ap.error("sizes must be >= 1, labels_min <= labels_max <= labels, noise in [0, 1]")
    rng = np.random.default_rng(a.seed)
    protos = rng.integers(0, a.features, size=(a.labels, a.prototypes))
    for name, n in (("train", a.n), ("test", a.test)):
        with open(f"{a.prefix}.{name}.libsvm", "w") as f:
            f.write(f"{n} {a.features} {a.labels}\n")
            n_lab = rng.integers(a.labels_min, a.labels_max + 1, size=n)
            for i in range(n):
                labs = np.unique(np.floor(a.labels * rng.random(n_lab[i]) ** 2).astype(np.int64))
                draws = 4 * a.nnz
                proto = rng.random(draws) >= a.noise
                which = labs[rng.integers(0, len(labs), size=draws)]
                feat = np.where(proto, protos[which, rng.integers(0, a.prototypes, size=draws)],
                                rng.integers(0, a.features, size=draws))
                add = 1.0 + rng.random(draws)
                # keep draws until nnz distinct features are reached
                _, first = np.unique(feat, return_index=True)
                order = np.sort(first)
                stop = order[a.nnz - 1] + 1 if len(order) >= a.nnz else draws
                vals = {}
                for j, v in zip(feat[:stop], add[:stop]):
                    vals[int(j)] = vals.get(int(j), 0.0) + float(v)
                idx = np.array(sorted(vals))
                v = np.array([vals[j] for j in idx])
                v /= np.linalg.norm(v)
                f.write(",".join(str(x) for x in labs) + " " +
                        " ".join(f"{j + 1}:{x:.6g}" for j, x in zip(idx, v)) + "\n")


if __name__ == "__main__":
    main()
