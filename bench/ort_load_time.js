// ONNX Runtime's load time, as a peer to `streamdet bench`'s load_ms: session creation
// (parse, graph optimization) and the first run, timed separately.
//   NODE_PATH=~/.cache/ort-bench/node_modules node bench/ort_load_time.js MODEL.onnx THREADS 1x3x640x640
// (onnxruntime-node is what ../shared/tools/ort-bench installs into ~/.cache/ort-bench.)
const ort = require('onnxruntime-node');
const [model, threads, shapeStr] = process.argv.slice(2);
(async () => {
  const shape = shapeStr.split('x').map(Number);
  const data = new Float32Array(shape.reduce((a, b) => a * b, 1)).fill(0.5);
  const t0 = process.hrtime.bigint();
  const s = await ort.InferenceSession.create(model, {
    intraOpNumThreads: +threads, interOpNumThreads: 1, graphOptimizationLevel: 'all', executionMode: 'sequential'});
  const t1 = process.hrtime.bigint();
  await s.run({[s.inputNames[0]]: new ort.Tensor('float32', data, shape)});
  const t2 = process.hrtime.bigint();
  console.log(`onnxruntime load ${(Number(t1 - t0) / 1e6).toFixed(1)} ms, first run ${(Number(t2 - t1) / 1e6).toFixed(1)} ms`);
})().catch(e => { console.error(e.message); process.exit(1); });
