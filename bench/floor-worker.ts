// The floor: raw BullMQ with an empty processor, in its own process like a Switchboard worker.
import { Worker } from 'bullmq';
import { Redis } from 'ioredis';

const [queueName, prefix, concurrency] = process.argv.slice(2);
const worker = new Worker(queueName!, async () => ({ ok: true }), {
  connection: new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null }),
  prefix: prefix!,
  concurrency: Number(concurrency),
});
await worker.waitUntilReady();
process.stdout.write('ready\n');
process.on('SIGTERM', () => void worker.close().then(() => process.exit(0)));
