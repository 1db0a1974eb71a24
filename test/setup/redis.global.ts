// vitest globalSetup: `npm test` brings its own Redis when none answers.
//
// - TEST_REDIS_URL set: used as given.
// - Else PING 127.0.0.1:6379 (or SWITCHBOARD_TEST_REDIS_PROBE=host:port, which exists so the
//   private-server path can be tried without stopping a shared Redis, e.g.
//   `SWITCHBOARD_TEST_REDIS_PROBE=127.0.0.1:6390 npx vitest run test/queue`); if it answers, share it.
// - Else start a private `redis-server` from the PATH on a free port (nothing kept on disk),
//   stopped at teardown by its own pid.
// - Else print one line saying how to get Redis and exit 1.
//
// The chosen URL goes into process.env.TEST_REDIS_URL before any test worker starts; the forked
// workers inherit it (test/unit/redis-choice.test.ts checks that), test/helpers/redis.ts reads
// it as REDIS_URL, and the tests pass REDIS_URL explicitly to every process they spawn.
import { spawn, spawnSync } from 'node:child_process';
import { connect, createServer } from 'node:net';
import { chooseRedis, probeAddress } from './redis-choice.js';

function pingAnswers(hostPort: string, timeoutMs = 500): Promise<boolean> {
  const i = hostPort.lastIndexOf(':');
  const host = i > 0 ? hostPort.slice(0, i) : hostPort;
  const port = i > 0 ? Number(hostPort.slice(i + 1)) : 6379;
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.once('connect', () => socket.write('PING\r\n'));
    socket.on('data', (d: Buffer) => {
      reply += d.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no free port'))));
    });
  });
}

export default async function setup(): Promise<() => Promise<void>> {
  const probe = probeAddress(process.env);
  const choice = await chooseRedis({
    testRedisUrl: process.env.TEST_REDIS_URL,
    probe,
    probeAnswers: () => pingAnswers(probe),
    hasRedisServer: () => spawnSync('redis-server', ['--version'], { stdio: 'ignore' }).status === 0,
  });
  if (choice.kind === 'missing') {
    process.stderr.write(`${choice.message}\n`);
    process.exit(1);
  }
  if (choice.kind !== 'private') {
    process.env.TEST_REDIS_URL = choice.url;
    return async () => {};
  }

  const port = await freePort();
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  server.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  // Never outlive the test run, even when vitest exits without running teardown.
  const onExit = () => server.exitCode === null && server.signalCode === null && process.kill(server.pid!, 'SIGTERM');
  process.once('exit', onExit);
  const address = `127.0.0.1:${port}`;
  for (let i = 0; i < 100 && !(await pingAnswers(address, 200)); i++) {
    if (server.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  if (!(await pingAnswers(address))) {
    onExit();
    process.stderr.write(
      `npm test: nothing answers on ${probe} and a private redis-server did not start on port ${port}: ${stderr.trim().split('\n').at(-1) ?? ''}\n`,
    );
    process.exit(1);
  }
  process.env.TEST_REDIS_URL = `redis://${address}`;
  process.stderr.write(`npm test: nothing answers on ${probe}; using a private redis-server on ${address} (pid ${server.pid}) for this run\n`);

  return async () => {
    process.off('exit', onExit);
    if (server.exitCode !== null || server.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => server.once('exit', () => resolve()));
    process.kill(server.pid!, 'SIGTERM');
    const timer = setTimeout(() => server.exitCode === null && server.signalCode === null && process.kill(server.pid!, 'SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
}
