/** Nearest-rank percentile of already collected samples (ms). */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank]!;
}

export interface LatencySummary {
  n: number;
  p50: number;
  p95: number;
  p99: number;
  /** Messages (or jobs) completed per second over the whole load. */
  perSecond: number;
}

export function summarise(samples: readonly number[], seconds: number): LatencySummary {
  const round = (v: number) => Math.round(v * 100) / 100;
  return {
    n: samples.length,
    p50: round(percentile(samples, 50)),
    p95: round(percentile(samples, 95)),
    p99: round(percentile(samples, 99)),
    perSecond: round(samples.length / seconds),
  };
}

export const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
