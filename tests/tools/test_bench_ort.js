/*
 * tools/bench_ort.js without ONNX Runtime: its statistics match the bench's (nearest-rank
 * percentiles, the steady-state test: window medians within 5% and no Mann-Kendall trend), the
 * seeded inputs are reproducible and in [0, 1), hetcl reports are read (and other JSON refused
 * with exit 2), and bad flags exit 2 with one line naming the flag.
 */
'use strict';
const assert = require('assert');
const fs = require('fs');
const os = require('os');
const path = require('path');
const {spawnSync} = require('child_process');

const tool = path.join(__dirname, '..', '..', 'tools', 'bench_ort.js');
const b = require(tool);
let failures = 0;
function check(name, fn) {
  try {
    fn();
    console.log(`ok   ${name}`);
  } catch (e) {
    failures++;
    console.log(`FAIL ${name}: ${e.message}`);
  }
}

check('nearest-rank percentiles', () => {
  const s = Float64Array.from([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
  assert.strictEqual(b.percentile(s, 0.5), 5);
  assert.strictEqual(b.percentile(s, 0.9), 9);
  assert.strictEqual(b.percentile(s, 0.99), 10);
  assert.strictEqual(b.percentile(Float64Array.from([7]), 0.5), 7);
});

check('Mann-Kendall: a monotone series is a trend, a flat or alternating one is not', () => {
  const up = Array.from({length: 32}, (_, i) => 100 + i);
  assert.ok(b.mannKendallP(up) < 0.01);
  assert.strictEqual(b.mannKendallP(Array(32).fill(5)), 1);
  const alt = Array.from({length: 32}, (_, i) => (i % 2 ? 100 : 101));
  assert.ok(b.mannKendallP(alt) > 0.5);
});

check('steady state as the bench tests it', () => {
  assert.strictEqual(b.steady(Array(31).fill(10)), false); /* fewer than 2 windows */
  const flat = Array.from({length: 40}, (_, i) => 100 + (i * 7919) % 5);
  assert.strictEqual(b.steady(flat), true);
  const falling = Array.from({length: 40}, (_, i) => (i < 24 ? 200 : 100) + (i % 3));
  assert.strictEqual(b.steady(falling), false); /* medians 10% apart or more */
  const drift = Array.from({length: 40}, (_, i) => 1000 + i); /* within 5%, but a trend */
  assert.strictEqual(b.steady(drift), false);
});

check('seeded inputs', () => {
  const x = b.uniforms(42, 1000), y = b.uniforms(42, 1000), z = b.uniforms(43, 1000);
  assert.deepStrictEqual(x, y);
  assert.notDeepStrictEqual(x, z);
  assert.ok(x.every(v => v >= 0 && v < 1));
  const mean = x.reduce((p, q) => p + q, 0) / x.length;
  assert.ok(mean > 0.45 && mean < 0.55);
});

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench_ort-'));
check('hetcl reports are read, configuration by configuration', () => {
  const f = path.join(dir, 'r.json');
  fs.writeFileSync(f, JSON.stringify({
    kind: 'hetcl.bench', provenance: {host: {cpu_model: 'Some CPU'}},
    configurations: [
      {status: 'ok', config: {model: 'mlp', batch: 64, devices: ['host0', 'host1'],
                              placement: 'split', scenario: 'offline'},
       latency: {end_to_end: {stats: {p50: {value_ns: 150000}}}},
       throughput: {items_per_s: 426000}},
      {status: 'failed', config: {model: 'mlp', batch: 1}},
    ]}));
  const c = b.hetclConfigs(f);
  assert.strictEqual(c.length, 1);
  assert.deepStrictEqual(c[0], {model: 'mlp', batch: 64, cpu: 'Some CPU',
                                label: 'host0+host1 split offline', p50_ns: 150000,
                                items_per_s: 426000});
});

function run(args) {
  return spawnSync(process.execPath, [tool, ...args], {encoding: 'utf8'});
}
check('bad input: exit 2, one line naming the flag or file', () => {
  const onnx = path.join(dir, 'm.onnx');
  fs.writeFileSync(onnx, 'not read: the flags are refused first');
  const notReport = path.join(dir, 'other.json');
  fs.writeFileSync(notReport, JSON.stringify({kind: 'hetcl.train'}));
  const cases = [
    [[], /--onnx: at least one/],
    [['--onnx', path.join(dir, 'missing.onnx')], /--onnx .*missing.onnx: no such file/],
    [['--onnx', onnx, '--batches', '1,x'], /--batches: expected positive integers/],
    [['--onnx', onnx, '--threads', '0'], /--threads: expected at least 1/],
    [['--onnx', onnx, '--threads', '2', '--replicas', '3'], /--replicas: expected a positive divisor/],
    [['--onnx', onnx, '--bogus', '1'], /--bogus: unknown flag/],
    [['--onnx', onnx, '--compare', notReport], /other.json: not a hetcl bench report/],
    [['--onnx', onnx, '--ort-dir', path.join(dir, 'no-ort')], /cannot load onnxruntime-node/],
  ];
  for (const [args, re] of cases) {
    const r = run(args);
    assert.strictEqual(r.status, 2, `${args.join(' ')}: exit ${r.status}`);
    assert.match(r.stderr, re);
    assert.strictEqual(r.stderr.trim().split('\n').length, 1, r.stderr);
    assert.strictEqual(r.stdout, '');
  }
});
fs.rmSync(dir, {recursive: true, force: true});

console.log(failures ? `test_bench_ort: ${failures} failed` : 'test_bench_ort: all checks passed');
process.exit(failures ? 1 : 0);
