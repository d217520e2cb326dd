// Per-node times of ONNX Runtime (CPU, the npm package ../shared/tools/ort-bench installs) for a
// model, to set beside streamdet's STREAMDET_NATIVE_PROFILE=all: which layers the peer runs
// faster. ORT's own profiler (enableProfiling) writes a Chrome trace; this prints the median
// kernel time of each node over the runs after a warm-up, slowest first, and the sum per op type.
//   NODE_PATH=~/.cache/ort-bench/node_modules node bench/ort_node_profile.js MODEL THREADS 1x3x256x256 [RUNS]
const ort = require('onnxruntime-node');
const fs = require('fs');
const os = require('os');
const path = require('path');

(async () => {
  const [model, threads = '1', shapeStr = '1x3x640x640', runsStr = '200'] = process.argv.slice(2);
  const shape = shapeStr.split('x').map(Number);
  const runs = Number(runsStr), warmup = Math.min(20, Math.floor(runs / 5));
  const prefix = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ortprof-')), 'p');
  const s = await ort.InferenceSession.create(model, {
    intraOpNumThreads: Number(threads), interOpNumThreads: 1, executionMode: 'sequential',
    graphOptimizationLevel: 'all', enableProfiling: true, profileFilePrefix: prefix });
  const n = shape.reduce((a, b) => a * b, 1);
  const feeds = { [s.inputNames[0]]: new ort.Tensor('float32', new Float32Array(n).fill(0.5), shape) };
  for (let i = 0; i < runs; ++i) await s.run(feeds);
  s.endProfiling();
  const dir = path.dirname(prefix);
  const file = path.join(dir, fs.readdirSync(dir).find((f) => f.endsWith('.json')));
  const events = JSON.parse(fs.readFileSync(file, 'utf8'));
  const byNode = new Map(), byOp = new Map();
  for (const e of events) {
    if (e.cat !== 'Node' || !e.name.endsWith('_kernel_time')) continue;
    const name = e.name.slice(0, -'_kernel_time'.length);
    if (!byNode.has(name)) byNode.set(name, []);
    byNode.get(name).push(e.dur / 1000);
    const op = (e.args && e.args.op_name) || '?';
    byOp.set(op, (byOp.get(op) || 0) + e.dur / 1000 / runs);
  }
  const median = (v) => { const a = [...v].sort((x, y) => x - y); return a[Math.floor(a.length / 2)]; };
  const rows = [...byNode].map(([k, v]) => [median(v.slice(warmup)), k]).sort((a, b) => b[0] - a[0]);
  console.log(`onnxruntime per-node median ms (${runs} runs, ${warmup} warm-up left out), sum ${rows.reduce((t, r) => t + r[0], 0).toFixed(3)} ms:`);
  for (const [ms, k] of rows) console.log(`${ms.toFixed(3).padStart(10)} ms  ${k}`);
  console.log('per op type (mean per run, ms):');
  for (const [op, ms] of [...byOp].sort((a, b) => b[1] - a[1])) console.log(`${ms.toFixed(3).padStart(10)} ms  ${op}`);
  fs.rmSync(dir, { recursive: true, force: true });
})();
