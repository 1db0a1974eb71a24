import type { BudgetReservation, ReserveResult } from '../access/token-budget.js';
import { estimateTokens } from '../agent/budget.js';
import { chargedTokens } from '../agent/model-step.js';
import type { ModelClient, TokenAllowance, TokenReservation } from '../agent/types.js';
import type { InboundMessage } from '../channels/types.js';
import type { RunContext } from './context.js';

/**
 * The loop's view of the requester's daily token budget (USER_DAILY_TOKENS), or undefined when
 * there is none. Each model call reserves its prompt's estimate on the person's counter (refused
 * when that would go over what is left today) and settles to what it used. A budget store that
 * cannot answer lets the call go ahead: a Redis fault is the run's to meet at its next fenced
 * write, not a reason to tell a person they spent too much.
 */
export function allowanceFor(ctx: RunContext, requester: InboundMessage): TokenAllowance | undefined {
  const budget = ctx.deps.agent.tokenBudget;
  if (!budget) return undefined;
  const user = { platform: requester.platform, id: requester.sender.id };
  const who = { userId: user.id, platform: user.platform };
  /** Reservations given out and not yet settled: what each holds on the counter (null: nothing, the store could not answer). */
  const open = new WeakMap<TokenReservation, BudgetReservation | null>();
  return {
    async reserve(estimate) {
      let result: ReserveResult;
      try {
        result = await budget.reserve(user, estimate);
      } catch (err) {
        ctx.log.warn({ err, ...who }, 'token budget unreadable; the model call goes ahead');
        const unheld: TokenReservation = { tokens: 0 };
        open.set(unheld, null);
        return { ok: true, reservation: unheld };
      }
      if (result.ok) {
        const reservation: TokenReservation = { tokens: result.reservation.tokens };
        open.set(reservation, result.reservation);
        return { ok: true, reservation };
      }
      const spent = result.spent;
      ctx.log.info({ ...who, reason: 'budget', spent, estimate, limit: budget.limit }, 'model call refused: daily token budget used up');
      ctx.deps.metrics?.refusals.inc({ platform: user.platform, reason: 'budget' });
      return {
        ok: false,
        detail: `${spent} of ${budget.limit} tokens used today (UTC) by ${user.platform}:${user.id}; the next model call is estimated at ${estimate}`,
      };
    },
    async settle(reservation, tokens) {
      const held = open.get(reservation);
      if (held === undefined) return; // settled already (or not ours)
      open.delete(reservation);
      try {
        if (held) await budget.settle(held, tokens);
        else if (tokens > 0) await budget.add(user, tokens);
      } catch (err) {
        ctx.log.warn({ err, ...who, tokens }, 'tokens not counted against the daily budget');
      }
    },
  };
}

/**
 * A model client that keeps count of what its calls are charged (chargedTokens: the reported
 * usage, or the estimate of prompt and answer when none was reported), for callers that do not
 * build the request themselves (the history summary).
 */
export function meteredModel(model: ModelClient): { model: ModelClient; charged(): number } {
  let charged = 0;
  return {
    model: {
      name: model.name,
      async complete(request) {
        const response = await model.complete(request);
        charged += chargedTokens(estimateTokens(request.messages, request.tools), response);
        return response;
      },
    },
    charged: () => charged,
  };
}
