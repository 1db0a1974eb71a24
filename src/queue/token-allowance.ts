import type { TokenAllowance } from '../agent/types.js';
import type { InboundMessage } from '../channels/types.js';
import type { RunContext } from './run-context.js';

/**
 * The loop's view of the requester's daily token budget (USER_DAILY_TOKENS), or undefined when
 * there is none. A budget store that cannot answer lets the call go ahead: a Redis fault is the
 * run's to meet at its next fenced write, not a reason to tell a person they spent too much.
 */
export function allowanceFor(ctx: RunContext, requester: InboundMessage): TokenAllowance | undefined {
  const budget = ctx.deps.tokenBudget;
  if (!budget) return undefined;
  const user = { platform: requester.platform, id: requester.sender.id };
  const who = { userId: user.id, platform: user.platform };
  return {
    async check() {
      let spent: number;
      try {
        spent = await budget.spent(user);
      } catch (err) {
        ctx.log.warn({ err, ...who }, 'token budget unreadable; the model call goes ahead');
        return { ok: true };
      }
      if (spent < budget.limit) return { ok: true };
      ctx.log.info({ ...who, reason: 'budget', spent, limit: budget.limit }, 'model call refused: daily token budget used up');
      ctx.deps.metrics?.refusals.inc({ platform: user.platform, reason: 'budget' });
      return { ok: false, detail: `${spent} of ${budget.limit} tokens used today (UTC) by ${user.platform}:${user.id}` };
    },
    async spend(tokens) {
      await budget.add(user, tokens).catch((err: unknown) => ctx.log.warn({ err, ...who, tokens }, 'tokens not counted against the daily budget'));
    },
  };
}
