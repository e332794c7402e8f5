#!/usr/bin/env node
// bench/network/ort_bench.js: the ONNX Runtime side of d5-bench-network.
//
//   node ort_bench.js MODEL BATCH THREADS SECONDS WARMUP MAX_REPS [options]
//     --ort-dir DIR   where bench/network/install.sh put node_modules (default:
//                     Node's own module resolution, NODE_PATH included)
//     --shape CxHxW   the input's dimensions after the batch (default: read
//                     from the model; needed when they are symbolic)
//     --seed S        seed of the input values (default 1)
//     --ids V         the input is int64 token ids in [0, V): the same
//                     xorshift32 sequence, (x >>> 8) % V
//     --load-only     time session creation instead of runs, and report memory
//
// Runs the model with onnxruntime-node on the CPU execution provider:
// intra_op_num_threads = THREADS, inter_op_num_threads = 1, sequential
// execution, all graph optimisations. The first input is filled with the same
// seeded xorshift32 values that d5-bench-network feeds d5 (uniform in [-1, 1),
// 24-bit mantissas, so both sides see bit-identical float32 inputs), or with
// --ids the same token ids. WARMUP
// runs are discarded; then each session.run is timed with
// process.hrtime.bigint() until SECONDS have passed (and at least MIN_REPS = 3
// samples were taken, as d5-bench-network asks of d5) or MAX_REPS samples were
// taken. One JSON line goes to standard output:
//   {"samples_ns": [...], "load_ms": .., "version": "1.30.0", "output": [...],
//    "output_name": "logits", "output_shape": [..]}
// "output" holds the first values (at most 4096) of the first output of the
// last run, for d5 to compare with its own.
//
// With --load-only, the session is created WARMUP + MAX_REPS times (within
// SECONDS once WARMUP are done), each released before the next; samples_ns are
// the creation times after the warm-up, and the line adds
//   "rss_before_bytes": RSS after loading the runtime, before the first session,
//   "rss_bytes": RSS with the first session alive,
//   "max_rss_bytes": the process's peak RSS at the end (getrusage maxrss).
//
// On any failure the line is {"error": "..."} and the exit status is 1; bad
// arguments exit with status 2.
'use strict';

const path = require('path');

// Samples taken even when the budget is spent (d5-bench-network's min_reps).
const MIN_REPS = 3;

function fail(message, code) {
  process.stdout.write(JSON.stringify({error: message}) + '\n');
  process.exit(code);
}

function parseArgs(argv) {
  const pos = [];
  const opt = {ortDir: null, shape: null, seed: 1, loadOnly: false, ids: 0};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--load-only') {
      opt.loadOnly = true;
    } else if (a === '--ort-dir' || a === '--shape' || a === '--seed' || a === '--ids') {
      if (i + 1 >= argv.length) fail(`option ${a} needs a value`, 2);
      const v = argv[++i];
      if (a === '--ort-dir') opt.ortDir = v;
      if (a === '--shape') opt.shape = v;
      if (a === '--seed') opt.seed = Number(v);
      if (a === '--ids') opt.ids = Number(v);
    } else if (a.startsWith('--')) {
      fail(`unknown option ${a}`, 2);
    } else {
      pos.push(a);
    }
  }
  if (pos.length !== 6)
    fail('usage: ort_bench.js MODEL BATCH THREADS SECONDS WARMUP MAX_REPS [--load-only] ' +
             '[--ort-dir DIR] [--shape CxHxW] [--seed S]',
         2);
  const num = (name, text, min) => {
    const v = Number(text);
    if (!Number.isFinite(v) || v < min) fail(`${name} '${text}' is not a number >= ${min}`, 2);
    return v;
  };
  opt.model = pos[0];
  opt.batch = num('BATCH', pos[1], 1);
  opt.threads = num('THREADS', pos[2], 1);
  opt.seconds = num('SECONDS', pos[3], 0);
  opt.warmup = num('WARMUP', pos[4], 0);
  opt.maxReps = num('MAX_REPS', pos[5], 1);
  if (!Number.isInteger(opt.seed) || opt.seed < 1 || opt.seed > 0xffffffff)
    fail(`--seed ${opt.seed} must be an integer in 1..4294967295`, 2);
  if (!Number.isInteger(opt.ids) || opt.ids < 0 || opt.ids > 0xffffff)
    fail(`--ids ${opt.ids} must be an integer in 0..16777215`, 2);
  if (opt.shape !== null && !/^[0-9]+(x[0-9]+)*$/.test(opt.shape))
    fail(`--shape '${opt.shape}' must look like 3x32x32`, 2);
  return opt;
}

function loadOrt(ortDir) {
  try {
    const where = ortDir ? require.resolve('onnxruntime-node', {paths: [path.resolve(ortDir)]}) :
                           'onnxruntime-node';
    return require(where);
  } catch (e) {
    fail(`cannot load onnxruntime-node${ortDir ? ' from ' + ortDir : ''}: ${e.message}`, 1);
  }
}

// xorshift32 (Marsaglia 2003): a function giving the next 24 top bits.
function xorshift(seed) {
  let x = seed >>> 0;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x >>> 8;
  };
}

// Floats in [-1, 1).
function fillInput(data, seed) {
  const next = xorshift(seed);
  for (let i = 0; i < data.length; i++) data[i] = next() / 16777216 * 2 - 1;
}

// The same sequence as token ids in [0, vocab).
function fillIds(data, seed, vocab) {
  const next = xorshift(seed);
  for (let i = 0; i < data.length; i++) data[i] = BigInt(next() % vocab);
}

function sessionOptions(opt) {
  return {
    executionProviders: ['cpu'],
    intraOpNumThreads: opt.threads,
    interOpNumThreads: 1,
    executionMode: 'sequential',
    graphOptimizationLevel: 'all',
  };
}

function inputShape(session, opt) {
  const meta = session.inputMetadata ? session.inputMetadata[0] : null;
  let rest;
  if (opt.shape !== null) {
    rest = opt.shape.split('x').map(Number);
  } else if (meta && meta.isTensor && meta.shape.length > 0) {
    rest = meta.shape.slice(1);
    if (rest.some((d) => typeof d !== 'number'))
      fail(`input '${meta.name}' has symbolic dimensions ${JSON.stringify(meta.shape)}: ` +
               'give them with --shape',
           2);
  } else {
    fail('the model does not say its input shape: give it with --shape', 2);
  }
  return [opt.batch, ...rest];
}

async function measureRuns(ort, opt) {
  const t0 = process.hrtime.bigint();
  const session = await ort.InferenceSession.create(opt.model, sessionOptions(opt));
  const loadMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const shape = inputShape(session, opt);
  const numel = shape.reduce((a, b) => a * b, 1);
  let input;
  if (opt.ids > 0) {
    const data = new BigInt64Array(numel);
    fillIds(data, opt.seed, opt.ids);
    input = new ort.Tensor('int64', data, shape);
  } else {
    const data = new Float32Array(numel);
    fillInput(data, opt.seed);
    input = new ort.Tensor('float32', data, shape);
  }
  const feeds = {[session.inputNames[0]]: input};
  let out = null;
  for (let i = 0; i < opt.warmup; i++) out = await session.run(feeds);
  const samples = [];
  const budget = BigInt(Math.round(opt.seconds * 1e9));
  const start = process.hrtime.bigint();
  while (samples.length < opt.maxReps) {
    const a = process.hrtime.bigint();
    out = await session.run(feeds);
    const b = process.hrtime.bigint();
    samples.push(Number(b - a));
    if (b - start >= budget && samples.length >= MIN_REPS) break;
  }
  const first = out[session.outputNames[0]];
  const result = {
    samples_ns: samples,
    load_ms: loadMs,
    output_name: session.outputNames[0],
    output_shape: first.dims,
    output: Array.from(first.data.slice(0, 4096)),
  };
  await session.release();
  return result;
}

async function measureLoads(ort, opt) {
  const rssBefore = process.memoryUsage().rss;
  let rssWith = 0, loadMs = 0;
  const samples = [];
  const budget = BigInt(Math.round(opt.seconds * 1e9));
  let start = null;
  for (let i = 0; i < opt.warmup + opt.maxReps; i++) {
    if (i === opt.warmup) start = process.hrtime.bigint();
    const a = process.hrtime.bigint();
    const session = await ort.InferenceSession.create(opt.model, sessionOptions(opt));
    const b = process.hrtime.bigint();
    if (i === 0) {
      loadMs = Number(b - a) / 1e6;
      rssWith = process.memoryUsage().rss;
    }
    await session.release();
    if (i >= opt.warmup) {
      samples.push(Number(b - a));
      if (b - start >= budget) break;
    }
  }
  return {
    samples_ns: samples,
    load_ms: loadMs,
    rss_before_bytes: rssBefore,
    rss_bytes: rssWith,
    max_rss_bytes: process.resourceUsage().maxRSS * 1024,
  };
}

async function main() {
  const opt = parseArgs(process.argv.slice(2));
  const ort = loadOrt(opt.ortDir);
  let result;
  try {
    result = opt.loadOnly ? await measureLoads(ort, opt) : await measureRuns(ort, opt);
  } catch (e) {
    fail(`${opt.model}: ${e.message}`, 1);
  }
  const versions = ort.env && ort.env.versions ? ort.env.versions : {};
  result.version = versions.node || versions.common || 'unknown';
  result.threads = opt.threads;
  process.stdout.write(JSON.stringify(result) + '\n');
}

main();
