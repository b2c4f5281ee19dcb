#!/usr/bin/python3
"""tools/blas_env.py without PyTorch or OpenBLAS: /proc/cpuinfo parsing, the candidate core
types per instruction set, the names --blas-coretype accepts, and the choice among candidates
with the subprocess probes replaced by canned figures (the fastest wins; a candidate that ran
another core than it asked for never does; names the library does not carry are not tried).
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tools"))
import blas_env  # noqa: E402

AVX512 = "avx512f avx512cd avx512bw avx512dq avx512vl"
BASE = "fpu sse sse2 pni ssse3 sse4_1 sse4_2 popcnt"
# Two processors, as /proc/cpuinfo lists them; the first block is the one read.
EMERALD = f"""processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 207
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 2
flags\t\t: {BASE} avx fma avx2 {AVX512} avx512_bf16 avx512_fp16 amx_tile amx_bf16 amx_int8

processor\t: 1
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 85
model name\t: second block, not read
flags\t\t: {BASE}
"""
SKYLAKEX = (f"cpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Xeon Gold\n"
            f"flags\t\t: {BASE} avx fma avx2 {AVX512}\n")
HASWELL = f"model name\t: Core i7\nflags\t\t: {BASE} avx fma avx2\n"
SANDY = f"model name\t: Core i7-2600\nflags\t\t: {BASE} avx\n"
AARCH64 = "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm\nCPU part\t: 0xd0c\n"


class CpuInfo(unittest.TestCase):
    def test_first_block(self):
        info = blas_env.parse_cpuinfo(EMERALD)
        self.assertEqual(info["model_name"], "Intel(R) Xeon(R) Processor")
        self.assertEqual((info["family"], info["model"], info["stepping"]), (6, 207, 2))
        self.assertIn("amx_tile", info["flags"])
        self.assertEqual(blas_env.cpu_label(info),
                         "Intel(R) Xeon(R) Processor (family 6 model 207 stepping 2)")

    def test_missing_fields(self):
        info = blas_env.parse_cpuinfo(AARCH64)
        self.assertEqual(info["flags"], set())
        self.assertEqual(blas_env.cpu_label(info), "unknown CPU")
        self.assertEqual(blas_env.cpu_label(blas_env.parse_cpuinfo("")), "unknown CPU")


class Candidates(unittest.TestCase):
    def names(self, text):
        return blas_env.candidates(blas_env.parse_cpuinfo(text)["flags"])

    def test_per_instruction_set(self):
        self.assertEqual(self.names(EMERALD), ["SapphireRapids", "Cooperlake", "SkylakeX",
                                               "Haswell", "Zen", "Sandybridge", "Nehalem",
                                               "Prescott"])
        self.assertEqual(self.names(SKYLAKEX), ["SkylakeX", "Haswell", "Zen", "Sandybridge",
                                                "Nehalem", "Prescott"])
        self.assertEqual(self.names(HASWELL), ["Haswell", "Zen", "Sandybridge", "Nehalem",
                                               "Prescott"])
        self.assertEqual(self.names(SANDY), ["Sandybridge", "Nehalem", "Prescott"])
        self.assertEqual(self.names(AARCH64), [])

    def test_avx512_needs_every_subset(self):
        # avx512f alone (Knights Landing: no BW/VL) must not offer SkylakeX's kernels.
        self.assertNotIn("SkylakeX", self.names(HASWELL.replace("avx2", "avx2 avx512f avx512cd")))

    def test_names(self):
        self.assertEqual(blas_env.canonical_name("skylakex"), "SkylakeX")
        self.assertEqual(blas_env.canonical_name("UNSET"), "unset")
        self.assertIsNone(blas_env.canonical_name("Skylake"))
        for name, _ in blas_env.CORETYPES:
            self.assertIn(name, blas_env.OPENBLAS_NAMES)


class Choose(unittest.TestCase):
    """choose() with run_probe replaced: GFLOP/s per OPENBLAS_CORETYPE, and the core each
    one makes OpenBLAS run (0.3.21 on model 207: unset runs Prescott, an unknown name falls
    back to Cooperlake)."""

    def setUp(self):
        self.lib = tempfile.NamedTemporaryFile(suffix=".so", delete=False)
        # The library carries every name of 0.3.21, not SapphireRapids.
        self.lib.write(b"\0".join(n.encode() for n in blas_env.OPENBLAS_NAMES[:-1]) + b"\0")
        self.lib.close()
        self.calls = []
        self.saved = blas_env.run_probe
        blas_env.run_probe = self.fake_probe
        self.gflops = {None: 30, "Cooperlake": 300, "SkylakeX": 290, "Haswell": 160, "Zen": 150,
                       "Sandybridge": 80, "Nehalem": 40, "Prescott": 30, "SapphireRapids": 400}
        self.cores = {None: "Prescott", "SapphireRapids": "Cooperlake"}

    def tearDown(self):
        blas_env.run_probe = self.saved
        os.unlink(self.lib.name)

    def fake_probe(self, env, coretype, args):
        self.calls.append((coretype, args[0]))
        if args[0] == "--discover":
            return {"blas": [self.lib.name], "core": self.cores[None], "lib": self.lib.name}
        if self.gflops.get(coretype) is None:
            return {"error": "Illegal instruction"}
        n = blas_env.SGEMM_N
        return {"times_s": [2 * n ** 3 / (self.gflops[coretype] * 1e9)] * 3,
                "core": self.cores.get(coretype, coretype)}

    def choose(self, text=EMERALD, forced=None):
        return blas_env.choose({"OPENBLAS_NUM_THREADS": "1"}, forced,
                               blas_env.parse_cpuinfo(text))

    def test_fastest_wins(self):
        rec = self.choose()
        self.assertEqual((rec["coretype"], rec["how"]), ("Cooperlake", "measured"))
        rows = {r["asked"]: r for r in rec["sgemm"]["candidates"]}
        self.assertEqual(rows["unset"]["core"], "Prescott")
        self.assertEqual(rows["Haswell"]["gflops"], 160.0)
        self.assertEqual(rows["Haswell"]["reps"], 3 * blas_env.ROUNDS)
        # Not carried by the library: never tried, although the CPU has the instructions.
        self.assertNotIn("SapphireRapids", rows)
        line = blas_env.summary(rec)
        self.assertIn("OPENBLAS_CORETYPE=Cooperlake", line)
        self.assertIn("unset->Prescott 30.0", line)
        self.assertIn("family 6 model 207", line)

    def test_turns_alternate(self):
        self.choose(SANDY)
        asked = [c for c, kind in self.calls if kind == "--sgemm"]
        order = [None, "Sandybridge", "Nehalem", "Prescott"]
        self.assertEqual(asked, order + order[::-1] + order)

    def test_a_core_other_than_asked_never_wins(self):
        with open(self.lib.name, "ab") as f:
            f.write(b"SapphireRapids\0")
        rec = self.choose()
        rows = {r["asked"]: r for r in rec["sgemm"]["candidates"]}
        self.assertEqual(rows["SapphireRapids"]["core"], "Cooperlake")
        self.assertEqual(rec["coretype"], "Cooperlake")
        self.assertIn("SapphireRapids->Cooperlake 400.0", blas_env.summary(rec))

    def test_unset_may_win(self):
        self.gflops[None] = 500
        self.assertIsNone(self.choose()["coretype"])

    def test_failed_candidate_is_shown_and_skipped(self):
        self.gflops["Cooperlake"] = None
        rec = self.choose()
        self.assertEqual(rec["coretype"], "SkylakeX")
        self.assertIn("Cooperlake failed (Illegal instruction)", blas_env.summary(rec))
        self.assertEqual([c for c, _ in self.calls].count("Cooperlake"), 1)

    def test_not_openblas(self):
        self.cores[None] = None
        rec = self.choose()
        self.assertIsNone(rec["coretype"])
        self.assertIn("not OpenBLAS", rec["how"])
        self.assertEqual(len(self.calls), 1)

    def test_forced_and_no_candidates_measure_nothing(self):
        rec = self.choose(forced="Haswell")
        self.assertEqual((rec["coretype"], rec["how"]), ("Haswell", "forced by --blas-coretype"))
        self.assertIsNone(self.choose(forced="unset")["coretype"])
        self.assertIsNone(self.choose(AARCH64)["coretype"])
        self.assertEqual(self.calls, [])


if __name__ == "__main__":
    unittest.main()
