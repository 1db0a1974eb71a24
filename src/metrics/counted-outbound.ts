import type { OutboundAdapter } from '../channels/types.js';
import type { Metrics } from './metrics.js';

/** Wraps a channel's outbound half so every post, edit and failure is counted by platform. */
export function countedOutbound(out: OutboundAdapter, metrics: Metrics): OutboundAdapter {
  const platform = out.platform;
  const counted = async <T>(operation: string, kind: string, call: () => Promise<T>): Promise<T> => {
    try {
      const result = await call();
      metrics.deliveries.inc({ platform, kind });
      return result;
    } catch (err) {
      metrics.deliveryErrors.inc({ platform, operation });
      throw err;
    }
  };
  const wrapped: OutboundAdapter = Object.create(out) as OutboundAdapter;
  return Object.assign(wrapped, {
    post: (to, text, kind, ledger) => counted('post', kind, () => out.post(to, text, kind, ledger)),
    edit: (to, id, text) => counted('edit', 'edit', () => out.edit(to, id, text)),
  } satisfies Partial<OutboundAdapter>);
}
