/**
 * A closed loop: `sessions` clients each send their next message as soon as the previous one
 * is answered, `perSession` times. Latency is measured per message, send to answer.
 */
export async function closedLoop(
  sessions: number,
  perSession: number,
  sendAndWait: (session: number, index: number) => Promise<void>,
): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: sessions }, async (_, s) => {
      for (let i = 0; i < perSession; i++) {
        const t0 = performance.now();
        await sendAndWait(s, i);
        latencies.push(performance.now() - t0);
      }
    }),
  );
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

/** Resolves waiters by key when a completion arrives; keys may complete before they are awaited. */
export class Completions {
  private readonly waiting = new Map<string, () => void>();
  private readonly early = new Set<string>();

  wait(key: string): Promise<void> {
    if (this.early.delete(key)) return Promise.resolve();
    return new Promise((resolve) => this.waiting.set(key, resolve));
  }

  done(key: string): void {
    const resolve = this.waiting.get(key);
    if (resolve) {
      this.waiting.delete(key);
      resolve();
    } else this.early.add(key);
  }
}
