#!/usr/bin/env node
/*
 * The ONNX Runtime baseline of `hetcl bench model`: ONNX files of the same models
 * (tools/export_onnx.py), the same batches and the same measurement rules as the bench
 * (profiler/src/bench/loop.c: a warm-up of at least 10 runs and 200 ms that ends once the
 * latencies are steady, as <hetcl/stats.h> tests it, or after 5 s; then timed requests until 100
 * requests AND 2 s, or 20 s), through ONNX Runtime's CPU execution provider, and the ratios to a
 * hetcl bench report. The mirror of tools/bench_torch.py for ONNX Runtime.
 *
 *   (cd tools/ort && ONNXRUNTIME_NODE_INSTALL=skip npm install)   # onnxruntime-node 1.30.0
 *   /usr/bin/python3 tools/export_onnx.py --model models/mlp.json --model models/lenet.json \
 *       --out-dir build/onnx
 *   node tools/bench_ort.js --onnx build/onnx/mlp.onnx --onnx build/onnx/lenet.onnx \
 *       --batches 1,64 --threads 2 --compare mlp-bench.json --compare lenet-bench.json
 *
 * ONNXRUNTIME_NODE_INSTALL=skip: the package's post-install step otherwise fetches GPU binaries
 * from a host these machines cannot reach; the CPU library ships inside the package.
 * Requests go through the native binding's synchronous run (the session handler's run wraps it in
 * a promise and setImmediate, which adds 4-6 us per request). Session: --threads intra-op
 * threads (the calling thread is one of them; ORT's pool spins between requests, its default),
 * one inter-op thread, sequential execution, every graph optimization. Inputs: seeded uniform
 * [0, 1) batches, --distinct of them rotated per request (like hetcl's random inputs).
 *
 * Ratios printed per (model, batch), against each hetcl configuration of that model and batch:
 *   latency speed-up   = ort p50 / hetcl p50   (> 1: hetcl is faster)
 *   throughput ratio   = hetcl items/s / ort items/s
 * --replicas N: N sessions of threads/N intra-op threads run side by side in worker threads (ORT
 * spending its threads on throughput, as hetcl's replicas placement does); throughput is the sum of
 * theirs, percentiles over all their requests.
 * Goals (issue 21, 2 threads on both sides): mlp b64 throughput >= 1.2, mlp b1 speed-up >= 1.25
 * (p50 at most 0.8x ORT's); lenet b1 speed-up >= 1.67 (at most 0.6x), b64 throughput >= 1.5.
 */
'use strict';
const fs = require('fs');
const threads = require('worker_threads');
const os = require('os');
const path = require('path');

function fail(msg) {
  process.stderr.write('bench_ort: ' + msg + '\n');
  process.exit(2);
}

function usage() {
  process.stdout.write(
      'usage: node tools/bench_ort.js --onnx FILE [--onnx FILE ...] [--batches 1,64] [--threads 2]\n' +
      '         [--replicas 1]\n' +
      '         [--seed 1] [--distinct 16] [--warmup-runs 10] [--warmup-ms 200]\n' +
      '         [--warmup-max-ms 5000] [--min-requests 100] [--min-time-ms 2000]\n' +
      '         [--max-time-ms 20000] [--compare REPORT ...] [--json OUT] [--ort-dir DIR]\n');
}

const NUMERIC = {
  '--threads': 'threads', '--replicas': 'replicas', '--seed': 'seed', '--distinct': 'distinct',
  '--warmup-runs': 'warmupRuns', '--warmup-ms': 'warmupMs', '--warmup-max-ms': 'warmupMaxMs',
  '--min-requests': 'minRequests', '--min-time-ms': 'minTimeMs', '--max-time-ms': 'maxTimeMs',
};

function parseArgs(argv) {
  const a = {
    onnx: [], compare: [], batches: '1,64', threads: 2, replicas: 1, seed: 1, distinct: 16, warmupRuns: 10,
    warmupMs: 200, warmupMaxMs: 5000, minRequests: 100, minTimeMs: 2000, maxTimeMs: 20000,
    json: null, ortDir: path.join(__dirname, 'ort', 'node_modules', 'onnxruntime-node'),
  };
  for (let i = 0; i < argv.length; i++) {
    const f = argv[i];
    if (f === '-h' || f === '--help') {
      usage();
      process.exit(0);
    }
    if (i + 1 >= argv.length) fail(`${f}: expected a value`);
    const v = argv[++i];
    if (f === '--onnx') a.onnx.push(v);
    else if (f === '--compare') a.compare.push(v);
    else if (f === '--batches') a.batches = v;
    else if (f === '--json') a.json = v;
    else if (f === '--ort-dir') a.ortDir = v;
    else if (f in NUMERIC) {
      const x = Number(v);
      if (!Number.isFinite(x) || x < 0) fail(`${f}: expected a non-negative number, got '${v}'`);
      a[NUMERIC[f]] = x;
    } else fail(`${f}: unknown flag (--help lists them)`);
  }
  if (!a.onnx.length) fail('--onnx: at least one ONNX file expected');
  for (const f of a.onnx)
    if (!fs.existsSync(f)) fail(`--onnx ${f}: no such file`);
  a.batchList = a.batches.split(',').map(Number);
  if (a.batchList.some(b => !Number.isInteger(b) || b < 1))
    fail(`--batches: expected positive integers separated by commas, got '${a.batches}'`);
  if (!Number.isInteger(a.threads) || a.threads < 1) fail(`--threads: expected at least 1`);
  if (!Number.isInteger(a.distinct) || a.distinct < 1) fail(`--distinct: expected at least 1`);
  if (!Number.isInteger(a.replicas) || a.replicas < 1 || a.threads % a.replicas)
    fail(`--replicas: expected a positive divisor of --threads (${a.threads}), got ${a.replicas}`);
  return a;
}

/* ---- statistics, as profiler/src/stats (nearest rank; the steady-state test) ---------------- */

function nearestRank(n, p) {
  return Math.min(Math.max(1, Math.ceil(p * n - 1e-9)), n);
}

function percentile(sorted, p) {
  return sorted[nearestRank(sorted.length, p) - 1];
}

function median(x) {
  return percentile(Float64Array.from(x).sort(), 0.5);
}

function erfc(x) {
  /* Numerical Recipes' erfcc (fractional error < 1.2e-7), enough for a p-value threshold */
  const z = Math.abs(x), t = 1 / (1 + 0.5 * z);
  const r = t * Math.exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
      t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
      t * (-0.82215223 + t * 0.17087277)))))))));
  return x >= 0 ? r : 2 - r;
}

/* Mann-Kendall with the tie and continuity corrections: the two-sided p of a monotone trend. */
function mannKendallP(x) {
  const n = x.length;
  let s = 0;
  for (let i = 0; i < n; i++)
    for (let j = i + 1; j < n; j++) s += (x[j] > x[i]) - (x[j] < x[i]);
  const sorted = Float64Array.from(x).sort();
  let ties = 0;
  for (let i = 0; i < n;) {
    let j = i + 1;
    while (j < n && sorted[j] === sorted[i]) j++;
    const t = j - i;
    ties += t * (t - 1) * (2 * t + 5);
    i = j;
  }
  const v = (n * (n - 1) * (2 * n + 5) - ties) / 18;
  if (v <= 0) return 1;
  const z = (Math.abs(s) - 1) / Math.sqrt(v);
  return z > 0 ? erfc(z / Math.SQRT2) : 1;
}

/* hetcl_stats_steady_state with the bench's options: window 16, tolerance 0.05, alpha 0.01. */
function steady(warm) {
  const w = 16;
  if (warm.length < 2 * w) return false;
  const last = warm.slice(warm.length - 2 * w);
  const prev = median(last.slice(0, w)), cur = median(last.slice(w));
  const change = prev !== 0 ? cur / prev - 1 : (cur === 0 ? 0 : Infinity);
  return Math.abs(change) <= 0.05 && mannKendallP(last) >= 0.01;
}

/* ---- the measurement ------------------------------------------------------------------------ */

/* splitmix64 uniform [0, 1) floats: a seeded, portable input stream. */
function uniforms(seed, n) {
  let s = BigInt.asUintN(64, BigInt(seed));
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    s = BigInt.asUintN(64, s + 0x9e3779b97f4a7c15n);
    let z = s;
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    z ^= z >> 31n;
    out[i] = Number(z >> 40n) / 16777216;
  }
  return out;
}

const nowNs = () => process.hrtime.bigint();

/* The request function of one session: --distinct seeded input batches rotated per request. */
function requester(ort, sess, meta, batch, a) {
  const shape = meta.shape.map((d, i) => (i === 0 ? batch : d));
  if (shape.slice(1).some(d => typeof d !== 'number'))
    fail(`${meta.file}: input ${meta.input} has symbolic dimensions past the batch`);
  const per = shape.reduce((x, y) => x * y, 1);
  const inputs = [];
  for (let i = 0; i < a.distinct; i++)
    inputs.push(new ort.Tensor('float32', uniforms(a.seed * 1000003 + i, per), shape));
  const fetches = {[meta.output]: null};
  let k = 0;
  return () => {
    const feeds = {[meta.input]: inputs[k++ % inputs.length]};
    const out = sess.run(feeds, fetches, {});
    return out[meta.output].data[0]; /* the result is in this process's memory, as hetcl's */
  };
}

/* Warm-up: minimum runs and time, then steady, or the maximum time. */
function warmUp(request, a) {
  const warm = [];
  const w0 = nowNs();
  for (;;) {
    const t0 = nowNs();
    request();
    const t1 = nowNs();
    warm.push(Number(t1 - t0));
    const ms = Number(t1 - w0) / 1e6;
    if (warm.length >= a.warmupRuns && ms >= a.warmupMs && steady(warm))
      return {runs: warm.length, steady: true};
    if (ms >= a.warmupMaxMs) return {runs: warm.length, steady: false};
  }
}

/* Timed requests until the minimums are met, or the maximum time. */
function timed(request, a) {
  const lat = [];
  const t0 = nowNs();
  let elapsedMs = 0, stoppedBy = 'minimums_met';
  for (;;) {
    const s = nowNs();
    request();
    const e = nowNs();
    lat.push(Number(e - s));
    elapsedMs = Number(e - t0) / 1e6;
    if (lat.length >= a.minRequests && elapsedMs >= a.minTimeMs) break;
    if (a.maxTimeMs > 0 && elapsedMs >= a.maxTimeMs) {
      stoppedBy = 'max_time';
      break;
    }
  }
  return {lat, elapsedMs, stoppedBy};
}

/* The figures of one or several replicas' timed phases (they ran side by side): percentiles over
 * every request, throughput the sum of the replicas' own. */
function summarise(batch, warms, runs) {
  const lat = [].concat(...runs.map(r => r.lat));
  const sorted = Float64Array.from(lat).sort();
  return {
    n: lat.length, warmup_runs: warms.reduce((x, w) => x + w.runs, 0),
    steady: warms.every(w => w.steady),
    stopped_by: runs.some(r => r.stoppedBy === 'max_time') ? 'max_time' : 'minimums_met',
    min_ns: sorted[0], p10_ns: percentile(sorted, 0.1), p50_ns: percentile(sorted, 0.5), p90_ns: percentile(sorted, 0.9),
    p99_ns: percentile(sorted, 0.99), mean_ns: lat.reduce((x, y) => x + y, 0) / lat.length,
    items_per_s: runs.reduce((x, r) => x + batch * r.lat.length / (r.elapsedMs / 1000), 0),
  };
}

function measure(ort, sess, meta, batch, a) {
  const request = requester(ort, sess, meta, batch, a);
  const w = warmUp(request, a);
  return summarise(batch, [w], [timed(request, a)]);
}

/* --replicas N: N sessions of threads/N intra-op threads each, one per worker thread, whose
 * timed phases start together (after every warm-up) and run side by side: ORT's way to spend
 * the threads on throughput rather than on one request's latency (as hetcl's replicas
 * placement does). */
function replicaMain() {
  const {file, batch, a, go, ready} = threads.workerData;
  const {ort, binding, initOrt} = loadOrt(a.ortDir);
  initOrt();
  const sess = new binding.InferenceSession();
  sess.loadModel(file, sessionOptions(a.threads / a.replicas));
  const request = requester(ort, sess, inputMeta(sess, file), batch, a);
  const w = warmUp(request, a);
  Atomics.add(ready, 0, 1);
  Atomics.notify(ready, 0);
  Atomics.wait(go, 0, 0);
  const t = timed(request, a);
  sess.dispose();
  threads.parentPort.postMessage({warm: w, run: t});
}

function measureReplicas(file, batch, a) {
  const go = new Int32Array(new SharedArrayBuffer(4)), ready = new Int32Array(new SharedArrayBuffer(4));
  const done = [];
  for (let i = 0; i < a.replicas; i++) {
    const w = new threads.Worker(__filename, {workerData: {file, batch, a, go, ready}});
    done.push(new Promise((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    }));
  }
  for (;;) { /* every replica warmed up: start the timed phases together */
    const r = Atomics.load(ready, 0);
    if (r >= a.replicas) break;
    Atomics.wait(ready, 0, r, 100);
  }
  Atomics.store(go, 0, 1);
  Atomics.notify(go, 0);
  return Promise.all(done).then(m => summarise(batch, m.map(x => x.warm), m.map(x => x.run)));
}

function cpuModel() {
  try {
    const m = /^model name\s*:\s*(.*)$/m.exec(fs.readFileSync('/proc/cpuinfo', 'utf8'));
    if (m) return m[1].trim();
  } catch (e) { /* fall through */ }
  return os.cpus().length ? os.cpus()[0].model : 'unknown';
}

function hetclConfigs(file) {
  let doc;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    fail(`${file}: cannot read a hetcl bench report: ${e.message}`);
  }
  if (doc.kind !== 'hetcl.bench') fail(`${file}: not a hetcl bench report (kind '${doc.kind}')`);
  const host = (doc.provenance || {}).host || {};
  return (doc.configurations || []).filter(c => c.status === 'ok').map(c => ({
    model: c.config.model, batch: c.config.batch, cpu: host.cpu_model || '?',
    label: c.config.devices.join('+') + ' ' + c.config.placement + ' ' + c.config.scenario,
    p50_ns: c.latency.end_to_end.stats.p50.value_ns, items_per_s: c.throughput.items_per_s,
  }));
}

function loadOrt(dir) {
  try {
    const ort = require(dir);
    const {binding, initOrt} = require(path.join(dir, 'dist', 'binding.js'));
    return {ort, binding, initOrt};
  } catch (e) {
    fail(`--ort-dir ${dir}: cannot load onnxruntime-node (install it: cd tools/ort && ` +
         `ONNXRUNTIME_NODE_INSTALL=skip npm install): ${e.message.split("\n")[0]}`);
  }
}

function sessionOptions(intraOpThreads) {
  return {
    executionProviders: ['cpu'], intraOpNumThreads: intraOpThreads, interOpNumThreads: 1,
    executionMode: 'sequential', graphOptimizationLevel: 'all',
  };
}

function inputMeta(sess, file) {
  const ins = sess.inputMetadata, outs = sess.outputMetadata;
  if (ins.length !== 1 || outs.length < 1) fail(`${file}: expected one input and an output`);
  return {file, input: ins[0].name, output: outs[0].name, shape: Array.from(ins[0].shape)};
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const compare = a.compare.map(hetclConfigs); /* bad reports refused before measuring */
  const {ort, binding, initOrt} = loadOrt(a.ortDir);
  initOrt();
  const version = ort.env.versions.node || ort.env.versions.common;
  const cpu = cpuModel();
  const how = a.replicas > 1
      ? `${a.replicas} sessions of ${a.threads / a.replicas} intra-op threads side by side`
      : `${a.threads} intra-op threads`;
  process.stdout.write(`# ONNX Runtime ${version} (onnxruntime-node, CPU EP), ${how}, ` +
      `synchronous binding run, CPU ${cpu}, ${os.cpus().length} CPUs, ` +
      `load ${os.loadavg()[0].toFixed(2)}\n`);
  const results = [];
  for (const file of a.onnx) {
    const sess = new binding.InferenceSession();
    try {
      sess.loadModel(file, sessionOptions(a.replicas > 1 ? 1 : a.threads));
    } catch (e) {
      fail(`--onnx ${file}: ONNX Runtime cannot load it: ${e.message}`);
    }
    const meta = inputMeta(sess, file);
    const name = path.basename(file).replace(/\.onnx$/, '');
    if (a.replicas > 1) sess.dispose(); /* the replicas hold their own sessions */
    for (const b of a.batchList) {
      const r = a.replicas > 1 ? await measureReplicas(file, b, a) : measure(ort, sess, meta, b, a);
      r.model = name;
      r.batch = b;
      results.push(r);
      process.stdout.write(
          `ort   ${name.padEnd(8)} b${String(b).padEnd(4)} p50 ${(r.p50_ns / 1e6).toFixed(4).padStart(8)} ms` +
          `  p90 ${(r.p90_ns / 1e6).toFixed(4).padStart(8)} ms  p99 ${(r.p99_ns / 1e6).toFixed(4).padStart(8)} ms` +
          `  ${r.items_per_s.toFixed(1).padStart(10)} items/s  (n=${r.n}${r.steady ? '' : ', warm-up not steady'})\n`);
    }
    if (a.replicas === 1) sess.dispose();
  }
  if (a.json) {
    const tmp = a.json + '.tmp';
    fs.writeFileSync(tmp, JSON.stringify({ort: version, threads: a.threads, replicas: a.replicas, cpu, results}, null, 1));
    fs.renameSync(tmp, a.json);
  }
  for (const configs of compare) {
    for (const c of configs) {
      const t = results.find(r => r.model === c.model && r.batch === c.batch);
      if (!t) continue;
      const speedup = c.p50_ns > 0 ? t.p50_ns / c.p50_ns : NaN;
      const tput = t.items_per_s > 0 ? c.items_per_s / t.items_per_s : NaN;
      const other = c.cpu !== cpu ? `  (hetcl ran on ${c.cpu})` : '';
      process.stdout.write(
          `hetcl ${c.model.padEnd(8)} b${String(c.batch).padEnd(4)} ${c.label.padEnd(32)} p50 ` +
          `${(c.p50_ns / 1e6).toFixed(4).padStart(8)} ms  ${c.items_per_s.toFixed(1).padStart(10)} items/s` +
          `  latency speed-up x${speedup.toFixed(2)}  throughput x${tput.toFixed(2)}${other}\n`);
    }
  }
}

if (!threads.isMainThread) {
  replicaMain();
} else if (require.main === module) {
  main();
} else {
  /* the pure parts, for tests/tools/test_bench_ort.js (no ONNX Runtime needed) */
  module.exports = {percentile, mannKendallP, steady, uniforms, hetclConfigs, parseArgs};
}
