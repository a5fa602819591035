// The BullMQ peer of Herald's benchmark (bench/peers.py runs it; see bench/bullmq_peer.py).
//
//   node bench.js N SPREAD_S [TARGET]      N delayed jobs, the i-th due at due + SPREAD_S * i / N
//   node bench.js --bare N TARGET          the ceiling: N POSTs with fetch alone, 64 in flight
//
// TARGET is the base URL of the webhook receiver (jobs POST to TARGET/h/<i % 200>); without
// it the job does nothing. Redis: HERALD_BENCH_REDIS_URL (default redis://127.0.0.1:6379/15,
// a database of its own). The queue's name is new each run and the queue is obliterated at
// the end. Prints one JSON object: `samples` (each job's start minus its due time, ms),
// `last_finish_ms`, `failed`, `added_late_ms` (> 0: the jobs were not all added before they
// were due), `add_ms` (how long the addBulk calls of the measured jobs took) and
// `peak_rss_mb`; bench/peers.py summarises it as it does the Python peers.
'use strict';

const IORedis = require('ioredis');
const { Queue, Worker } = require('bullmq');

const CONCURRENCY = 64;
const URLS = 200; // as bot/bench.py's WEBHOOK_URLS
const WARM_UP = 200; // as Herald's bench: a running service is warm

// wall-clock milliseconds with sub-millisecond resolution (Date.now() is whole ms)
const now = () => performance.timeOrigin + performance.now();

function post(target, i) {
  // Node's built-in fetch (undici) keeps connections alive by default
  return fetch(`${target}/h/${i % URLS}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ i }),
  }).then(async (answer) => {
    await answer.arrayBuffer(); // read the body: the connection goes back to the pool
    if (!answer.ok) throw new Error(`HTTP ${answer.status}`);
  });
}

function report(samples, lastFinish, extra) {
  const out = {
    samples,
    last_finish_ms: lastFinish,
    peak_rss_mb: Math.round(process.resourceUsage().maxRSS / 102.4) / 10,
    ...extra,
  };
  // resolved once written: a pipe is written asynchronously and exit() would cut it short
  return new Promise((resolve) => process.stdout.write(JSON.stringify(out) + '\n', resolve));
}

async function bare(n, target) {
  const samples = [];
  let next = 0;
  let lastFinish = 0;
  let failed = 0;
  // warm, as the queued runs are: fetch's first few hundred requests are several times
  // slower than the rest (undici's code loaded and compiled, connections opened)
  for (let i = 0; i < WARM_UP; i += CONCURRENCY) {
    await Promise.all(Array.from({ length: CONCURRENCY }, (_, j) => post(target, i + j)));
  }
  const due = now() + 500;
  await new Promise((resolve) => setTimeout(resolve, 500));
  const lane = async () => {
    while (next < n) {
      const i = next++;
      samples.push(now() - due);
      try {
        await post(target, i);
      } catch {
        failed += 1;
      }
      lastFinish = now() - due;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, lane));
  await report(samples, lastFinish, { failed, added_late_ms: 0 });
}

async function delayed(n, spreadMs, target) {
  const url = process.env.HERALD_BENCH_REDIS_URL || 'redis://127.0.0.1:6379/15';
  const name = `herald-bench-${process.pid}-${Date.now()}`;
  const redis = () => new IORedis(url, { maxRetriesPerRequest: null });
  const queue = new Queue(name, { connection: redis() });
  const samples = [];
  let lastFinish = 0;
  let failed = 0;
  let warm = 0;
  let done = 0;
  let finished;
  const allDone = new Promise((resolve) => (finished = resolve));

  const worker = new Worker(
    name,
    async (job) => {
      const { i, due } = job.data;
      if (due !== null) samples.push(now() - due);
      if (target) await post(target, i);
      if (due === null) warm += 1;
      else lastFinish = Math.max(lastFinish, now() - due);
    },
    { connection: redis(), concurrency: CONCURRENCY },
  );
  const settle = (job) => {
    if (job && job.data.due !== null && ++done >= n) finished();
  };
  worker.on('completed', settle);
  worker.on('failed', (job) => {
    if (job && job.data.due !== null) failed += 1;
    settle(job);
  });
  const opts = { removeOnComplete: true, removeOnFail: true };
  try {
    await worker.waitUntilReady();
    await queue.addBulk(
      Array.from({ length: WARM_UP }, (_, i) => ({ name: 'warm', data: { i, due: null }, opts })),
    );
    while (warm < WARM_UP) await new Promise((resolve) => setTimeout(resolve, 10));

    // all jobs are in before the first is due: about 0.1 ms per job to add, 0.37 ms on a
    // busy machine (5,000 in 1.8 s), so 0.5 ms per job; the lateness counts from the due time
    const addedAt = Date.now();
    const due = addedAt + 500 + Math.ceil(n * 0.5);
    const jobs = Array.from({ length: n }, (_, i) => {
      const at = due + Math.round((spreadMs * i) / n);
      // one timestamp for all: BullMQ makes a job due at its timestamp + delay
      const timing = { timestamp: addedAt, delay: at - addedAt };
      return { name: 'job', data: { i, due: at }, opts: { ...opts, ...timing } };
    });
    const adding = now();
    for (let i = 0; i < n; i += 1000) await queue.addBulk(jobs.slice(i, i + 1000));
    const addMs = Math.round((now() - adding) * 10) / 10;
    const addedLate = Math.max(0, Date.now() - due);

    const deadline = setTimeout(finished, spreadMs + 120_000 + n);
    await allDone;
    clearTimeout(deadline);
    await report(samples, lastFinish, { failed, added_late_ms: addedLate, add_ms: addMs });
  } finally {
    await worker.close(true);
    await queue.obliterate({ force: true });
    await queue.close();
  }
}

async function main(argv) {
  if (argv[0] === '--bare') return bare(Number(argv[1]), argv[2]);
  return delayed(Number(argv[0]), Number(argv[1]) * 1000, argv[2] || null);
}

main(process.argv.slice(2)).then(
  () => process.exit(0),
  (error) => {
    process.stderr.write(`bullmq peer: ${error && error.message ? error.message : error}\n`);
    process.exit(1);
  },
);
