#!/usr/bin/python3
"""The OpenBLAS core type of the PyTorch baselines (bench_torch.py, bench_train.py), chosen by
measurement on the machine at hand (issue 14).

Debian's OpenBLAS 0.3.21 is built with DYNAMIC_ARCH: it picks its kernels ("core type") from
cpuid when it loads, or takes them from OPENBLAS_CORETYPE. Both go wrong here: this project's
machines export OPENBLAS_CORETYPE=Haswell (half speed on AVX-512 CPUs), and 0.3.21 does not know
newer Intel Xeons (family 6 model 207 falls through its model table to Prescott, 5x slower than
SkylakeX). So the baseline times a short SGEMM on the BLAS that PyTorch loads, in a subprocess
per candidate core type, with the environment the baseline will run with, and keeps the fastest:

    /usr/bin/python3 tools/blas_env.py [--blas-dir DIR] [--blas-coretype NAME] [--json]

prints the one line the scripts print. Candidates are the core types whose instructions the CPU
has (/proc/cpuinfo flags) and whose name the loaded OpenBLAS carries, plus "unset" (OpenBLAS's
own detection). What OpenBLAS really ran is read back from openblas_get_corename(): 0.3.21 does
not accept "Cooperlake" in OPENBLAS_CORETYPE (its name loop stops one entry short), but an
unknown name falls back to detection by instruction set, which picks Cooperlake on a CPU with
AVX512-BF16; a candidate that ran another core than it asked for is shown and never chosen.
Cooperlake's SGEMM kernel is SkylakeX's and Zen's is Haswell's, so within those pairs the
winner is a matter of noise, and either is right. Nothing is cached: a run measures again.
Standard library only (one probe imports torch).
"""
import json
import os
import statistics
import subprocess
import sys
import time

# The environment variable that carries the choice into the re-executed script.
RECORD_ENV = "HETCL_BLAS_ENV"

AVX512 = ("avx512f", "avx512cd", "avx512bw", "avx512dq", "avx512vl")
# OpenBLAS's x86-64 core types worth trying, the newest first, with the /proc/cpuinfo flags
# their kernels use (dynamic.c checks the same through cpuid: support_avx512_bf16,
# support_avx512, support_avx2, support_avx). The AMD-only types (Bulldozer .. Excavator) may
# use FMA4 and are left out; Zen is Haswell's kernels with other blocking, valid on any AVX2 CPU.
# SapphireRapids exists from OpenBLAS 0.3.24 on; an older library does not carry the name.
CORETYPES = (
    ("SapphireRapids", AVX512 + ("avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16")),
    ("Cooperlake", AVX512 + ("avx512_bf16",)),
    ("SkylakeX", AVX512),
    ("Haswell", ("avx2", "fma")),
    ("Zen", ("avx2", "fma")),
    ("Sandybridge", ("avx",)),
    ("Nehalem", ("ssse3", "sse4_1", "sse4_2")),
    ("Prescott", ("pni",)),
)
# Every name OpenBLAS's dynamic.c knows (0.3.21, plus SapphireRapids): what --blas-coretype
# accepts besides "unset". OpenBLAS itself takes any string and falls back silently.
OPENBLAS_NAMES = ("Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom", "Core2",
                  "Penryn", "Dunnington", "Nehalem", "Athlon", "Opteron", "Opteron_SSE3",
                  "Barcelona", "Nano", "Sandybridge", "Bobcat", "Bulldozer", "Piledriver",
                  "Haswell", "Steamroller", "Excavator", "Zen", "SkylakeX", "Cooperlake",
                  "SapphireRapids")

SGEMM_N = 1024
ROUNDS = 3
PROBE_MIN_REPS = 3
PROBE_MIN_S = 0.15  # a fast core gets more repetitions per turn than the minimum


def parse_cpuinfo(text):
    """The first processor's model name, family, model, stepping and flags from /proc/cpuinfo
    text; missing fields are None (flags: empty)."""
    info = {"model_name": None, "family": None, "model": None, "stepping": None, "flags": set()}
    keys = {"model name": "model_name", "cpu family": "family", "model": "model",
            "stepping": "stepping", "flags": "flags"}
    for line in text.splitlines():
        if not line.strip():
            if info["flags"] or info["model_name"]:
                break  # the end of the first processor's block
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or key not in keys:
            continue
        if key == "flags":
            info["flags"] = set(value.split())
        elif key in ("cpu family", "model", "stepping"):
            info[keys[key]] = int(value) if value.isdigit() else value
        else:
            info[keys[key]] = value
    return info


def read_cpuinfo(path="/proc/cpuinfo"):
    try:
        with open(path) as f:
            return parse_cpuinfo(f.read())
    except OSError:
        return parse_cpuinfo("")


def cpu_label(info):
    """"Intel(R) Xeon(R) Processor (family 6 model 207 stepping 2)"."""
    ids = " ".join(f"{k} {info[k]}" for k in ("family", "model", "stepping") if info[k] is not None)
    name = info["model_name"] or "unknown CPU"
    return f"{name} ({ids})" if ids else name


def candidates(flags):
    """The core types of CORETYPES whose flags are all in `flags`, in table order."""
    return [name for name, need in CORETYPES if all(f in flags for f in need)]


def canonical_name(name):
    """The OpenBLAS spelling of a core type given in any case, "unset", or None if unknown."""
    if name.lower() == "unset":
        return "unset"
    return next((n for n in OPENBLAS_NAMES if n.lower() == name.lower()), None)


def openblas_loaded():
    """(paths of the BLAS files this process mapped, the OpenBLAS core in use or None, the file
    whose sgemm_ and openblas_get_corename answered or None). Call after a matmul has loaded
    the BLAS; the core is None when the BLAS is not OpenBLAS. libblas.so.3, the name torch
    links against, is tried first."""
    import ctypes
    paths = []
    with open("/proc/self/maps") as f:
        for line in f:
            fields = line.split()
            if len(fields) >= 6 and "blas" in os.path.basename(fields[-1]) \
                    and fields[-1] not in paths:
                paths.append(fields[-1])
    for p in sorted(paths, key=lambda p: not os.path.basename(p).startswith("libblas")):
        try:
            lib = ctypes.CDLL(p)
            fn, _ = lib.openblas_get_corename, lib.sgemm_
        except (OSError, AttributeError):
            continue
        fn.restype = ctypes.c_char_p
        return paths, fn().decode().strip(), p
    return paths, None, None


def names_in(paths):
    """The CORETYPES names that occur as strings in these library files (OpenBLAS keeps its
    corename table there); None when no file could be read."""
    found, read = set(), False
    for p in paths:
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError:
            continue
        read = True
        found.update(n for n, _ in CORETYPES if b"\0" + n.encode() + b"\0" in data)
    return found if read else None


def discover_main():
    """In the subprocess: load torch's BLAS with one small matmul, print JSON with the mapped
    BLAS files, the one answering openblas_get_corename, and the core it runs."""
    import torch
    torch.mm(torch.rand(8, 8), torch.rand(8, 8))
    paths, core, lib = openblas_loaded()
    print(json.dumps({"blas": paths, "core": core, "lib": lib}))


def sgemm_main(argv):
    """In the subprocess: time n x n SGEMMs (C = A B) through sgemm_ of the library at argv[0],
    print JSON with the times and the core OpenBLAS runs."""
    import array
    import ctypes
    path, n, min_reps, min_s = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
    lib = ctypes.CDLL(path)
    corename = lib.openblas_get_corename
    corename.restype = ctypes.c_char_p
    bufs = [array.array("f", [0.5]) * (n * n) for _ in range(3)]
    a, b, c = ((ctypes.c_float * (n * n)).from_buffer(x) for x in bufs)
    ref = ctypes.byref
    trans, dim = ctypes.c_char(b"N"), ctypes.c_int(n)
    alpha, beta = ctypes.c_float(1.0), ctypes.c_float(0.0)

    def gemm():
        lib.sgemm_(ref(trans), ref(trans), ref(dim), ref(dim), ref(dim), ref(alpha), a, ref(dim),
                   b, ref(dim), ref(beta), c, ref(dim))

    for _ in range(2):  # allocates OpenBLAS's buffers, faults the pages in, warms the caches
        gemm()
    times = []
    t_end = time.perf_counter() + min_s
    while len(times) < min_reps or (time.perf_counter() < t_end and len(times) < 50):
        t0 = time.perf_counter()
        gemm()
        times.append(time.perf_counter() - t0)
    if c[0] != 0.5 * 0.5 * n:
        sys.exit(f"sgemm_ computed {c[0]}, expected {0.5 * 0.5 * n}")
    print(json.dumps({"times_s": times, "core": corename().decode().strip()}))


def run_probe(env, coretype, args):
    """Runs this file with `args` in a subprocess with `env` and OPENBLAS_CORETYPE=coretype
    (None: unset); returns its JSON, or {"error": text}."""
    env = dict(env)
    env.pop(RECORD_ENV, None)
    if coretype is None:
        env.pop("OPENBLAS_CORETYPE", None)
    else:
        env["OPENBLAS_CORETYPE"] = coretype
    cmd = [sys.executable, os.path.abspath(__file__)] + [str(a) for a in args]
    try:
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        return {"error": "timed out"}
    if p.returncode != 0:
        tail = (p.stderr.strip().splitlines() or [f"exit status {p.returncode}"])[-1]
        return {"error": tail}
    return json.loads(p.stdout.strip().splitlines()[-1])


def choose(env, forced=None, cpuinfo=None):
    """The core type for a baseline that will run with `env` (OPENBLAS_NUM_THREADS and
    LD_LIBRARY_PATH as it will have them). forced: a name of OPENBLAS_NAMES or "unset", taken
    without measuring. cpuinfo: parse_cpuinfo's result (default: this machine's). Returns the
    record the scripts print and store: cpu, coretype (None: unset), how, and for a
    measurement the figures.

    A torch subprocess finds the BLAS file torch maps; then each candidate times SGEMMs on
    that file directly (a subprocess each, since OpenBLAS reads OPENBLAS_CORETYPE when it
    loads), without importing torch: 0.1 s to start instead of 1.5 s, so that the candidates
    can take ROUNDS turns, in alternating order, and a burst of load from others on the
    machine falls on several of them rather than on one. Each figure is the median of all
    its repetitions."""
    info = cpuinfo if cpuinfo is not None else read_cpuinfo()
    rec = {"cpu": cpu_label(info), "coretype": None, "how": None,
           "openblas_num_threads": env.get("OPENBLAS_NUM_THREADS")}
    if forced is not None:
        rec["coretype"] = None if forced == "unset" else forced
        rec["how"] = "forced by --blas-coretype"
        return rec
    names = candidates(info["flags"])
    if not names:
        rec["how"] = "no x86 core type to try on this CPU"
        return rec
    disc = run_probe(env, None, ["--discover"])
    if "error" in disc:
        rec["how"] = f"the torch probe failed ({disc['error']})"
        return rec
    rec["blas"] = disc["blas"]
    if disc["core"] is None:
        rec["how"] = "torch's BLAS is not OpenBLAS, OPENBLAS_CORETYPE does nothing"
        return rec
    known = names_in(disc["blas"])
    if known:
        names = [n for n in names if n in known]
    order = ["unset"] + names
    rows = {asked: {"asked": asked, "core": None, "times_s": []} for asked in order}
    for turn in range(ROUNDS):
        for asked in (order if turn % 2 == 0 else order[::-1]):
            row = rows[asked]
            if "error" in row:
                continue
            r = run_probe(env, None if asked == "unset" else asked,
                          ["--sgemm", disc["lib"], SGEMM_N, PROBE_MIN_REPS, PROBE_MIN_S])
            if "error" in r:
                row["error"] = r["error"]
                continue
            row["core"] = r["core"]
            row["times_s"] += r["times_s"]
    out = []
    for asked in order:
        row = rows[asked]
        times = row.pop("times_s")
        if "error" not in row:
            row["gflops"] = round(2 * SGEMM_N ** 3 / statistics.median(times) / 1e9, 1)
            row["reps"] = len(times)
        out.append(row)
    rec["sgemm"] = {"n": SGEMM_N, "lib": disc["lib"], "rounds": ROUNDS,
                    "unit": "GFLOP/s, median of the repetitions", "candidates": out}
    # Only a candidate that ran the core it asked for may win ("unset" runs what it runs).
    fair = [r for r in out if "gflops" in r and r["asked"] in ("unset", r["core"])]
    if not fair:
        rec["how"] = "every SGEMM probe failed"
        return rec
    best = max(fair, key=lambda r: r["gflops"])
    rec["coretype"] = None if best["asked"] == "unset" else best["asked"]
    rec["how"] = "measured"
    return rec


def summary(rec):
    """The one line the scripts print about the choice."""
    chosen = rec["coretype"] or "unset"
    line = f"CPU {rec['cpu']}; OPENBLAS_CORETYPE={chosen}, {rec['how']}"
    if "sgemm" in rec:
        figs = []
        for r in rec["sgemm"]["candidates"]:
            label = r["asked"] if r["asked"] == r.get("core") else f"{r['asked']}->{r.get('core')}"
            figs.append(f"{label} {r['gflops']:.1f}" if "gflops" in r
                        else f"{r['asked']} failed ({r['error']})")
        sg = rec["sgemm"]
        line += (f" (SGEMM n={sg['n']} on torch's {os.path.basename(sg['lib'])}, "
                 f"OPENBLAS_NUM_THREADS={rec['openblas_num_threads']}, {sg['rounds']} turns each, "
                 f"median GFLOP/s: " + ", ".join(figs) + ")")
    return line


def baseline_env(want_env, blas_dir):
    """This process's environment with want_env and, when blas_dir is given, blas_dir first on
    LD_LIBRARY_PATH: the one the baseline runs with (OPENBLAS_CORETYPE apart)."""
    env = dict(os.environ)
    env.update(want_env)
    ld = env.get("LD_LIBRARY_PATH", "")
    if blas_dir and ld.split(":")[0] != blas_dir:
        env["LD_LIBRARY_PATH"] = blas_dir + (":" + ld if ld else "")
    return env


def forced_name(name, tag):
    """The canonical spelling of a --blas-coretype value, or exits with the accepted names."""
    canon = canonical_name(name)
    if canon is None:
        sys.exit(f"{tag}: --blas-coretype {name}: not an OpenBLAS core type (one of "
                 + ", ".join(OPENBLAS_NAMES) + ", or unset)")
    return canon


def prepare(want_env, blas_dir, forced=None, measure=True, tag="blas_env"):
    """For a baseline script, first thing after parsing its flags: chooses the core type,
    prints the line, and re-executes the script with want_env, OPENBLAS_CORETYPE as chosen and
    blas_dir first on LD_LIBRARY_PATH (so that OpenBLAS reads them when it loads). In the
    re-executed script it returns the record (cpu, coretype, how, figures), removing the
    variable that carried it so that child processes do not inherit it. forced: the
    --blas-coretype value or None. measure=False leaves OPENBLAS_CORETYPE unset without
    measuring (a run without PyTorch)."""
    env = baseline_env(want_env, blas_dir)
    carried = os.environ.pop(RECORD_ENV, None)
    if carried is not None:
        rec = json.loads(carried)
        # The record is trusted only with the environment it was made for (not one inherited
        # from another run with other flags).
        if all(os.environ.get(k) == v for k, v in rec.pop("env").items()):
            return rec
    if forced is not None:
        forced = forced_name(forced, tag)
    if measure or forced is not None:
        rec = choose(env, forced)
    else:
        rec = {"cpu": cpu_label(read_cpuinfo()), "coretype": None,
               "how": "not measured (no PyTorch run)",
               "openblas_num_threads": env.get("OPENBLAS_NUM_THREADS")}
    print(f"{tag}: " + summary(rec), flush=True)
    if rec["coretype"]:
        env["OPENBLAS_CORETYPE"] = rec["coretype"]
    else:
        env.pop("OPENBLAS_CORETYPE", None)
    keys = list(want_env) + ["LD_LIBRARY_PATH", "OPENBLAS_CORETYPE"]
    env[RECORD_ENV] = json.dumps(dict(rec, env={k: env.get(k) for k in keys}))
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def in_use(rec):
    """In the baseline, after torch has run a matmul: adds what the process really runs to the
    record (blas: the mapped BLAS files; core: OpenBLAS's core, None if not OpenBLAS) and
    returns the words for its header line."""
    rec["blas"], rec["core"], _ = openblas_loaded()
    if rec["core"] is None:
        return f"not OpenBLAS, CPU {rec['cpu']}"
    asked = rec["coretype"] or "unset"
    return (f"OpenBLAS core {rec['core']} (OPENBLAS_CORETYPE={asked}, {rec['how']}), "
            f"CPU {rec['cpu']}")


def main():
    if len(sys.argv) > 1 and sys.argv[1] in ("--discover", "--sgemm"):
        if sys.argv[1] == "--discover":
            discover_main()
        else:
            sgemm_main(sys.argv[2:])
        return
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--blas-dir", help="directory with the libblas.so.3 to use (e.g. OpenBLAS's)")
    ap.add_argument("--blas-coretype", help="take this core type (or unset) without measuring")
    ap.add_argument("--json", action="store_true", help="print the record as JSON too")
    args = ap.parse_args()
    env = baseline_env({"OPENBLAS_NUM_THREADS": "1"}, args.blas_dir)
    forced = forced_name(args.blas_coretype, "blas_env") if args.blas_coretype else None
    rec = choose(env, forced)
    print("blas_env: " + summary(rec))
    if args.json:
        print(json.dumps(rec, indent=1))


if __name__ == "__main__":
    main()
