import { spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { waitFor } from '../test/helpers/processes.js';
import { measurePipeline, type LoadShape } from './overhead.js';
import { freePort } from '../test/helpers/ports.js';
import { spawnTracked, stopChild } from './children.js';

/**
 * Three local Redis Cluster masters (no replicas), the pipeline run against them through
 * REDIS_URL=redis+cluster://…, and a check that every key it wrote sits in the one slot of the
 * QUEUE_PREFIX hash tag.
 */
export async function measureCluster(modelUrl: string, shape: LoadShape) {
  const dir = await mkdtemp(join(tmpdir(), 'sb-cluster-'));
  const ports = [await freePort(), await freePort(), await freePort()];
  const nodes: ChildProcess[] = ports.map((port) =>
    spawnTracked(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        `nodes-${port}.conf`,
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
      ],
      { stdio: 'ignore' },
    ),
  );
  try {
    for (const port of ports)
      await waitFor(
        `redis ${port}`,
        () =>
          spawnSync('redis-cli', ['-p', String(port), 'ping'])
            .stdout?.toString()
            .includes('PONG'),
        10_000,
        100,
      );
    const create = spawnSync('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], {
      encoding: 'utf8',
    });
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}${create.stderr}`);
    await waitFor(
      'cluster_state:ok',
      () =>
        ports.every((p) =>
          spawnSync('redis-cli', ['-p', String(p), 'cluster', 'info'])
            .stdout?.toString()
            .includes('cluster_state:ok'),
        ),
      20_000,
      200,
    );

    const url = `redis+cluster://127.0.0.1:${ports[0]}`;
    const result = await measurePipeline(url, modelUrl, shape, 1, 50);

    // Which slots hold keys? Ask every node for its keys and their slots.
    const slots = new Set<number>();
    let keys = 0;
    for (const port of ports) {
      const node = new Redis(port, '127.0.0.1');
      for (const key of await node.keys('*')) {
        keys += 1;
        slots.add(Number(await node.cluster('KEYSLOT', key)));
      }
      node.disconnect();
    }
    return { nodes: 3, ...result, keysLeft: keys, slot: [...slots].join(','), oneSlot: slots.size <= 1 };
  } finally {
    await Promise.all(nodes.map((n) => stopChild(n)));
    await rm(dir, { recursive: true, force: true });
  }
}
