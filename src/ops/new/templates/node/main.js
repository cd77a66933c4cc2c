// {{name}}: a {{kind}} probe, as `parkbench new probe` wrote it. A task here is a promise;
// replace the work with your program's. What a {{kind}} probe prints: docs/study-files.md (kinds of
// measurement) and docker/README.md (the probe protocol, `result`, `latency` and `note` lines).
'use strict';

// The index-th argument (after the script) as a number, or def.
function arg(index, def) {
  const a = process.argv[index + 1];
  if (a === undefined) return def;
  if (!/^\d+$/.test(a)) {
    console.error(`probe: argument ${index} must be a whole number, got ${JSON.stringify(a)}`);
    process.exit(2);
  }
  return Number(a);
}

// Prints a line on stdout (the sampler reads stdout line by line).
function say(line) {
  process.stdout.write(line + '\n');
}

// @kind steady
// Resolves on the next line on stdin (the sampler's go-ahead).
const lines = [];
let waiting = null;
let buffered = '';
process.stdin.on('data', (chunk) => {
  buffered += chunk;
  let i;
  while ((i = buffered.indexOf('\n')) >= 0) {
    buffered = buffered.slice(i + 1);
    if (waiting) { const w = waiting; waiting = null; w(); } else lines.push(1);
  }
});
process.stdin.on('end', () => { if (waiting) { console.error('probe: stdin closed'); process.exit(1); } });
function waitLine() {
  if (lines.length) { lines.pop(); return Promise.resolve(); }
  return new Promise((resolve) => { waiting = resolve; });
}

// probe N: the probe protocol. N promises parked on one gate, released at once.
async function main() {
  const n = arg(1, 1000);
  say('baseline');
  await waitLine();
  let open;
  const gate = new Promise((resolve) => { open = resolve; });
  let completed = 0;
  const tasks = [];
  for (let i = 0; i < n; i++) tasks.push(gate.then(() => { completed++; }));
  say(`ready tasks=${n}`);
  await waitLine();
  open();
  await Promise.all(tasks);
  say(`done completed=${completed}`);
  process.stdin.destroy();
}
// @end
// @kind peak
// probe N [SLEEP_MS]: N promises, each a timer of SLEEP_MS (500); the sampler measures the peak
// memory of the whole run.
async function main() {
  const n = arg(1, 1000), sleepMs = arg(2, 500);
  const tasks = [];
  for (let i = 0; i < n; i++) tasks.push(new Promise((r) => setTimeout(r, sleepMs)));
  await Promise.all(tasks);
  say('note every timer fired');
}
// @end
// @kind timed
// probe [BATCHES [OPS]]: BATCHES (20) batches of OPS (100000) async calls awaited, one `result`
// line each.
async function main() {
  const batches = arg(1, 20), ops = arg(2, 100000);
  const task = async () => {};
  for (let b = 0; b < batches; b++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < ops; i++) await task();
    say(`result ns_per_op=${(Number(process.hrtime.bigint() - start) / ops).toFixed(1)}`);
  }
}
// @end
// @kind latency
// probe [OPS]: OPS (1000) times, the time from scheduling a callback (setImmediate) to its run, each
// printed as one `latency` line (the sampler merges them into one histogram).
async function main() {
  const ops = arg(1, 1000);
  for (let i = 0; i < ops; i++) {
    const start = process.hrtime.bigint();
    const fired = await new Promise((r) => setImmediate(() => r(process.hrtime.bigint())));
    say(`latency value_ns=${fired - start} count=1`);
  }
}
// @end
// @kind reported
// probe N: N promises, each counting itself; prints what it counted as one `result` line (values
// the program computes itself: sizes, counts, limits).
async function main() {
  const n = arg(1, 1000);
  let count = 0;
  const tasks = [];
  for (let i = 0; i < n; i++) tasks.push(Promise.resolve().then(() => { count++; }));
  await Promise.all(tasks);
  say(`result completed=${count}`);
}
// @end

main().catch((e) => { console.error(e); process.exit(1); });
