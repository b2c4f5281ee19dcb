#!/usr/bin/env python3
"""The vendor baseline of `hetcl bench ops` on an NVIDIA GPU: PyTorch's fp32 matrix products
(cuBLAS) at the same shapes as hetcl's GEMM cases, timed the same way (the median of timed
repetitions after warm-up, inputs on the device).

    python3 tools/bench_cublas.py --square 1024,4096,8192 --batch 64,256 [--json FILE]

TF32 is off (torch.backends.cuda.matmul.allow_tf32 = False, PyTorch's default): hetcl's OpenCL
GEMM computes in fp32, so the fair baseline is cuBLAS's fp32 SGEMM. --tf32 also times the
matrix units' TF32 mode, for reference only.
"""
import argparse
import json
import sys


def shapes(batches, squares):
    """(label, m, n, k, trans_a, trans_b) as profiler/src/opbench/cases.c names them."""
    out = []
    for n in squares:
        out.append((f"gemm {n}x{n}x{n} (NN)", n, n, n, False, False))
    for b in batches:
        out.append((f"mlp b{b} fc1 fwd (NT)", b, 256, 784, False, True))
        out.append((f"mlp b{b} fc2 fwd (NT)", b, 128, 256, False, True))
        out.append((f"mlp b{b} fc2 dX (NN)", b, 256, 128, False, False))
        out.append((f"mlp b{b} fc1 dW (TN)", 256, 784, b, True, False))
    return out


def time_gemm(torch, m, n, k, ta, tb, reps):
    dev = torch.device("cuda")
    g = torch.Generator(device=dev).manual_seed(1)
    a = torch.randn((k, m) if ta else (m, k), device=dev, generator=g)
    b = torch.randn((n, k) if tb else (k, n), device=dev, generator=g)
    c = torch.empty((m, n), device=dev)
    a_op = a.t() if ta else a
    b_op = b.t() if tb else b
    for _ in range(3):
        torch.matmul(a_op, b_op, out=c)
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        torch.matmul(a_op, b_op, out=c)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) * 1e3)  # microseconds
    times.sort()
    return times[len(times) // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--square", default="1024,4096,8192", help="square sizes (default %(default)s)")
    ap.add_argument("--batch", default="64,256", help="MLP batch sizes (default %(default)s)")
    ap.add_argument("--reps", type=int, default=20, help="timed products per shape (default 20)")
    ap.add_argument("--tf32", action="store_true", help="also time TF32 (reference only)")
    ap.add_argument("--json", help="write the results as JSON")
    args = ap.parse_args()
    try:
        import torch
    except ImportError:
        sys.exit("bench_cublas.py: PyTorch is not installed")
    if not torch.cuda.is_available():
        sys.exit("bench_cublas.py: PyTorch sees no CUDA device")
    squares = [int(x) for x in args.square.split(",") if x]
    batches = [int(x) for x in args.batch.split(",") if x]
    modes = [False, True] if args.tf32 else [False]
    rows = []
    print(f"device: {torch.cuda.get_device_name(0)}; torch {torch.__version__}")
    print(f"{'case':28} {'mode':5} {'us':>10} {'GFLOP/s':>10}")
    for tf32 in modes:
        torch.backends.cuda.matmul.allow_tf32 = tf32
        for label, m, n, k, ta, tb in shapes(batches, squares):
            us = time_gemm(torch, m, n, k, ta, tb, args.reps)
            gflops = 2.0 * m * n * k / us / 1e3
            mode = "tf32" if tf32 else "fp32"
            rows.append({"case": label, "mode": mode, "us": us, "gflops": gflops})
            print(f"{label:28} {mode:5} {us:10.1f} {gflops:10.1f}")
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
                       "results": rows}, f, indent=1)
        import os
        os.replace(args.json + ".tmp", args.json)


if __name__ == "__main__":
    main()
