#!/usr/bin/python3
"""The PyTorch baseline of `hetcl bench model`: the same model specs (models/*.json), the same
batches and the same measurement rules (warm-up, then timed requests until a minimum count and a
minimum time), through PyTorch on the CPU, and the ratios to a hetcl bench report.

    /usr/bin/python3 tools/bench_torch.py --model models/mlp.json --model models/lenet.json \
        --batches 1,64 --compare mlp-bench.json --compare lenet-bench.json

Conditions (issue 6): Debian's python3-torch, 2 intra-op threads, OPENBLAS_NUM_THREADS=1, and
the OPENBLAS_CORETYPE that runs SGEMM fastest on this machine, chosen by measurement before the
run (tools/blas_env.py; issue 14: neither the exported Haswell nor OpenBLAS 0.3.21's own
detection, Prescott on family 6 model 207 Xeons, is the best on AVX-512 CPUs) or forced with
--blas-coretype NAME (or unset). The script prints the choice with the SGEMM figures of every
candidate, re-executes itself with that environment, and records the core type OpenBLAS runs
and the CPU model in its header line and in --json. Weights: a
safetensors checkpoint (--weights, tensors named as in the spec: layers.<i>.weight/bias) or
PyTorch's default init (speed does not depend on the values). Inputs: seeded uniform [0, 1)
tensors, --distinct of them rotated per request (like hetcl's random inputs).

Ratios printed per (model, batch), against each hetcl configuration of that model and batch:
  latency speed-up   = torch p50 / hetcl p50   (> 1: hetcl is faster)
  throughput ratio   = hetcl items/s / torch items/s
Debian's python3-torch calls the system libblas.so.3: without OpenBLAS installed that is the
reference BLAS, many times slower at batch 64. The BLAS in use is printed; --blas-dir DIR puts
another libblas.so.3 first (e.g. the one in libopenblas0-pthread, unpacked with
`apt-get download libopenblas0-pthread && dpkg-deb -x *.deb root`, without installing it).

Goals (issue 6): MLP batch 1 p50 at most half of PyTorch's (speed-up >= 2); batch 64
throughput >= 1.2x on both models.
"""
import argparse
import json
import os
import struct
import sys
import time

import blas_env


def blas_in_use():
    """The BLAS library this process mapped (after a matmul has run), for the record: Debian's
    torch calls libblas.so.3, which is the slow reference BLAS unless OpenBLAS provides it."""
    libs = set()
    with open("/proc/self/maps") as f:
        for line in f:
            path = line.split()[-1] if len(line.split()) >= 6 else ""
            if "blas" in os.path.basename(path) or "mkl" in os.path.basename(path):
                libs.add(path)
    return ", ".join(sorted(libs)) or "none mapped"


def fail(msg):
    print("bench_torch: " + msg, file=sys.stderr)
    sys.exit(2)


def load_safetensors(path):
    import torch
    with open(path, "rb") as f:
        raw = f.read()
    if len(raw) < 8:
        fail(f"{path}: not a safetensors file")
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = raw[8 + n:]
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        if t["dtype"] != "F32":
            fail(f"{path}: tensor {name}: dtype {t['dtype']}, expected F32")
        a, b = t["data_offsets"]
        out[name] = torch.frombuffer(bytearray(data[a:b]), dtype=torch.float32).reshape(t["shape"])
    return out


def build(spec_path, weights):
    import torch
    from torch import nn
    with open(spec_path) as f:
        spec = json.load(f)
    shape = list(spec["input"]["shape"])
    acts = {"relu": nn.ReLU, "sigmoid": nn.Sigmoid, "tanh": nn.Tanh}
    layers = []
    for i, l in enumerate(spec["layers"]):
        t = l["type"]
        if t == "dense":
            m = nn.Linear(shape[0], l["units"], bias=l.get("bias", True))
            shape = [l["units"]]
        elif t == "conv2d":
            k = l["kernel"]
            s = l.get("stride", [1, 1])
            p = l.get("padding", [0, 0])
            m = nn.Conv2d(shape[0], l["filters"], tuple(k), tuple(s), tuple(p), bias=l.get("bias", True))
            h = (shape[1] + 2 * p[0] - k[0]) // s[0] + 1
            w = (shape[2] + 2 * p[1] - k[1]) // s[1] + 1
            shape = [l["filters"], h, w]
        elif t in ("maxpool2d", "avgpool2d"):
            k = l["size"]
            s = l.get("stride", k)
            m = (nn.MaxPool2d if t == "maxpool2d" else nn.AvgPool2d)(tuple(k), tuple(s))
            shape = [shape[0], (shape[1] - k[0]) // s[0] + 1, (shape[2] - k[1]) // s[1] + 1]
        elif t == "flatten":
            m = nn.Flatten()
            n = 1
            for d in shape:
                n *= d
            shape = [n]
        else:
            fail(f"{spec_path}: layers[{i}]: unknown type {t}")
        if weights is not None and hasattr(m, "weight"):
            with torch.no_grad():
                m.weight.copy_(weights[f"layers.{i}.weight"])
                if m.bias is not None:
                    m.bias.copy_(weights[f"layers.{i}.bias"])
        layers.append(m)
        a = l.get("activation", "none")
        if a in acts:
            layers.append(acts[a]())
    layers.append(nn.Softmax(dim=1))
    return spec["name"], list(spec["input"]["shape"]), nn.Sequential(*layers).eval()


def percentile(sorted_ns, p):
    """Nearest rank, as hetcl's stats.h."""
    import math
    k = max(1, math.ceil(p * len(sorted_ns) - 1e-9))
    return sorted_ns[min(k, len(sorted_ns)) - 1]


def measure(model, in_shape, batch, args):
    import torch
    g = torch.Generator().manual_seed(args.seed)
    inputs = [torch.rand([batch] + in_shape, generator=g) for _ in range(args.distinct)]
    i = 0
    with torch.inference_mode():
        t_end = time.perf_counter() + args.warmup_ms / 1000
        n = 0
        while n < args.warmup_runs or time.perf_counter() < t_end:
            model(inputs[i % len(inputs)]).numpy()
            i += 1
            n += 1
        lat = []
        t0 = time.perf_counter_ns()
        while True:
            a = time.perf_counter_ns()
            model(inputs[i % len(inputs)]).numpy()  # the result reaches host memory, as hetcl's
            b = time.perf_counter_ns()
            lat.append(b - a)
            i += 1
            elapsed_ms = (b - t0) / 1e6
            if len(lat) >= args.min_requests and elapsed_ms >= args.min_time_ms:
                break
            if elapsed_ms >= args.max_time_ms:
                break
    total_s = (time.perf_counter_ns() - t0) / 1e9
    s = sorted(lat)
    return {
        "n": len(lat),
        "p50_ns": percentile(s, 0.5),
        "p90_ns": percentile(s, 0.9),
        "p99_ns": percentile(s, 0.99),
        "mean_ns": sum(lat) / len(lat),
        "items_per_s": batch * len(lat) / total_s,
    }


def hetcl_configs(path):
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{path}: cannot read a hetcl bench report: {e}")
    if doc.get("kind") != "hetcl.bench":
        fail(f"{path}: not a hetcl bench report (kind {doc.get('kind')!r})")
    for c in doc.get("configurations", []):
        if c.get("status") != "ok":
            continue
        cfg = c["config"]
        st = c["latency"]["end_to_end"]["stats"]
        yield {
            "model": cfg["model"],
            "batch": cfg["batch"],
            "label": "+".join(cfg["devices"]) + " " + cfg["placement"] + " " + cfg["scenario"],
            "p50_ns": st["p50"]["value_ns"],
            "items_per_s": c["throughput"]["items_per_s"],
        }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", action="append", required=True, help="model spec (repeatable)")
    ap.add_argument("--weights", action="append", default=[], help="checkpoint per --model, in order")
    ap.add_argument("--batches", default="1,64")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--distinct", type=int, default=16)
    ap.add_argument("--warmup-runs", type=int, default=20)
    ap.add_argument("--warmup-ms", type=float, default=500)
    ap.add_argument("--min-requests", type=int, default=100)
    ap.add_argument("--min-time-ms", type=float, default=2000)
    ap.add_argument("--max-time-ms", type=float, default=20000)
    ap.add_argument("--compare", action="append", default=[], help="hetcl bench report(s)")
    ap.add_argument("--json", help="write the baseline figures here")
    ap.add_argument("--blas-dir", help="directory with the libblas.so.3 to use (e.g. OpenBLAS's)")
    ap.add_argument("--blas-coretype", metavar="NAME",
                    help="OPENBLAS_CORETYPE for PyTorch (or unset), instead of the fastest measured")
    args = ap.parse_args()
    # Re-executes the script once with OPENBLAS_NUM_THREADS=1, the chosen core type and
    # --blas-dir on LD_LIBRARY_PATH: OpenBLAS reads them when it loads.
    blas = blas_env.prepare({"OPENBLAS_NUM_THREADS": "1"}, args.blas_dir, args.blas_coretype,
                            tag="bench_torch")
    try:
        batches = [int(b) for b in args.batches.split(",")]
        if any(b < 1 for b in batches):
            raise ValueError
    except ValueError:
        fail(f"--batches: expected positive integers separated by commas, got {args.batches!r}")
    import torch
    torch.set_num_threads(args.threads)
    (torch.rand(8, 8) @ torch.rand(8, 8)).sum()  # loads the BLAS
    print(f"# PyTorch {torch.__version__}, {torch.get_num_threads()} threads, "
          f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS')}, "
          f"load {open('/proc/loadavg').read().split()[0]}, BLAS: {blas_in_use()}, "
          + blas_env.in_use(blas))
    results = []
    for k, spec in enumerate(args.model):
        weights = load_safetensors(args.weights[k]) if k < len(args.weights) else None
        name, in_shape, model = build(spec, weights)
        for b in batches:
            r = measure(model, in_shape, b, args)
            r.update(model=name, batch=b)
            results.append(r)
            print(f"torch {name:8s} b{b:<4d} p50 {r['p50_ns'] / 1e6:8.3f} ms  p90 {r['p90_ns'] / 1e6:8.3f} ms"
                  f"  p99 {r['p99_ns'] / 1e6:8.3f} ms  {r['items_per_s']:10.1f} items/s  (n={r['n']})")
    if args.json:
        tmp = args.json + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"torch": torch.__version__, "threads": args.threads, "blas": blas_in_use(),
                       "cpu": blas["cpu"], "openblas": blas, "results": results}, f, indent=1)
        os.replace(tmp, args.json)
    for path in args.compare:
        for c in hetcl_configs(path):
            base = [r for r in results if r["model"] == c["model"] and r["batch"] == c["batch"]]
            if not base:
                continue
            t = base[0]
            speedup = t["p50_ns"] / c["p50_ns"] if c["p50_ns"] > 0 else float("nan")
            tput = c["items_per_s"] / t["items_per_s"] if t["items_per_s"] > 0 else float("nan")
            print(f"hetcl {c['model']:8s} b{c['batch']:<4d} {c['label']:32s} p50 {c['p50_ns'] / 1e6:8.3f} ms"
                  f"  latency speed-up x{speedup:5.2f}  throughput x{tput:5.2f}")


if __name__ == "__main__":
    main()
