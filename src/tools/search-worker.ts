import { Worker } from 'node:worker_threads';

export interface SearchJob {
  files: { abs: string; rel: string }[];
  source: string;
  flags: string;
  maxMatches: number;
  maxLineChars: number;
  maxFileBytes: number;
  maxTotalBytes: number;
}

export interface SearchOutcome {
  /** `path:line: text` lines, in file order. */
  hits: string[];
  scanned: number;
  /** Oversized or unreadable files (binary ones are skipped silently). */
  skipped: number;
  stop: '' | 'matches' | 'bytes' | 'timeout';
}

// Plain JS run in a worker thread: a catastrophic regex blocks only the worker, which we terminate.
// (A string, not a .ts file, so it loads the same under tsx, vitest and compiled output.)
const SOURCE = String.raw`
const { parentPort, workerData: job } = require('node:worker_threads');
const fs = require('node:fs');
const re = new RegExp(job.source, job.flags);
let matches = 0, bytes = 0, scanned = 0, skipped = 0, stop = '';
for (const file of job.files) {
  let buf;
  try {
    const info = fs.statSync(file.abs);
    if (!info.isFile() || info.size > job.maxFileBytes) { skipped++; continue; }
    if (bytes + info.size > job.maxTotalBytes) { stop = 'bytes'; break; }
    buf = fs.readFileSync(file.abs);
  } catch { skipped++; continue; }
  bytes += buf.length;
  scanned++;
  if (buf.subarray(0, 8000).includes(0)) continue;
  const lines = buf.toString('utf8').split('\n');
  const hits = [];
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i];
    if (line.endsWith('\r')) line = line.slice(0, -1);
    if (!re.test(line)) continue;
    if (matches >= job.maxMatches) { stop = 'matches'; break; }
    matches++;
    if (line.length > job.maxLineChars) line = line.slice(0, job.maxLineChars - 1) + '\u2026';
    hits.push(file.rel + ':' + (i + 1) + ': ' + line);
  }
  if (hits.length > 0) parentPort.postMessage({ type: 'hits', hits });
  if (stop) break;
}
parentPort.postMessage({ type: 'done', scanned, skipped, stop });
`;

type WorkerMessage = { type: 'hits'; hits: string[] } | { type: 'done'; scanned: number; skipped: number; stop: SearchOutcome['stop'] };

/** Runs `job` in a worker; on timeout returns the hits so far, on abort rejects with the reason. */
export function runSearch(job: SearchJob, timeoutMs: number, signal: AbortSignal): Promise<SearchOutcome> {
  signal.throwIfAborted();
  return new Promise((resolve, reject) => {
    const hits: string[] = [];
    const worker = new Worker(SOURCE, {
      eval: true,
      workerData: job,
      resourceLimits: { maxOldGenerationSizeMb: 256 },
    });
    let settled = false;
    const finish = (fn: () => void): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      void worker.terminate();
      fn();
    };
    const onAbort = (): void => finish(() => reject(signal.reason));
    const timer = setTimeout(() => finish(() => resolve({ hits, scanned: -1, skipped: 0, stop: 'timeout' })), timeoutMs);
    signal.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (msg: WorkerMessage) => {
      if (msg.type === 'hits') hits.push(...msg.hits);
      else finish(() => resolve({ hits, scanned: msg.scanned, skipped: msg.skipped, stop: msg.stop }));
    });
    worker.on('error', (err) => finish(() => reject(err)));
    worker.on('exit', (code) => finish(() => reject(new Error(`search worker exited early (code ${code})`))));
  });
}
