import { afterEach, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { FOLDED_NOTE } from '../../../src/channels/discord/outbound.js';
import { DISCORD_EPOCH, INTERACTION_TOKEN_MS, interactionKey, messageIdOf, tokenLifeLeftMs } from '../../../src/channels/discord/ids.js';
import { startFakeDiscord, type FakeDiscord, type FakeInteraction } from '../../fakes/discord-server.js';
import { waitFor } from '../../helpers/processes.js';
import { dumpPrefix, keysHolding } from '../../helpers/redis-dump.js';
import { startStack, type Stack } from '../../helpers/stack.js';

/**
 * A slash command's interaction token is a credential for 15 minutes. It may sit in Redis only
 * where the reply needs it (the inbox entry, the committed reply, the interaction key), never in
 * job data, run records, history or the journal, and nowhere once the reply is final.
 */

let world: { fake: FakeDiscord; stack: Stack } | undefined;
afterEach(async () => {
  await world?.stack.close();
  await world?.fake.close();
  world = undefined;
});

const snowflakeAt = (ms: number) => String(BigInt(ms - DISCORD_EPOCH) << 22n);

describe('tokenLifeLeftMs', () => {
  it('counts from the interaction’s creation (its snowflake), not from when we store it', () => {
    const now = Date.now();
    expect(tokenLifeLeftMs({ id: snowflakeAt(now) }, now)).toBe(INTERACTION_TOKEN_MS);
    expect(tokenLifeLeftMs({ id: snowflakeAt(now - 14 * 60_000) }, now)).toBe(60_000);
    expect(tokenLifeLeftMs({ id: snowflakeAt(now - 16 * 60_000) }, now)).toBeLessThan(0);
  });
});

describe('Discord interaction tokens in Redis', () => {
  it('live only in the inbox, the reply and the interaction key (expiring with the token) while needed, and nowhere once the turn is answered', async () => {
    const fake = await startFakeDiscord();
    const stack = await startStack('dc-token', fake.env());
    world = { fake, stack };
    const channel = stack.gateway.channels.find((c) => c.name === 'discord')!;
    await waitFor('the Discord gateway to be ready', () => channel.health().connected, 15_000);
    const prefix = stack.config.queue.prefix;
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    stack.fake.setHandler(async (req) => {
      if (stack.fake.requests.length === 1) {
        await held;
        return { content: 'first answer' };
      }
      return {
        content: `together: ${(req.body.messages as ChatMessage[])
          .filter((m) => m.role === 'user')
          .slice(-2)
          .map((m) => String(m.content))
          .join(' + ')}`,
      };
    });

    // The first /ask runs (held at the model); two more wait and are folded into the next turn.
    const one = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'one' });
    await waitFor('the first run', () => stack.fake.requests.length === 1, 15_000);
    const two = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'two' });
    const three = fake.slash({ name: 'ask', channel: fake.ids.general, prompt: 'three' });
    const all: FakeInteraction[] = [one, two, three];
    await waitFor('both queued', async () => (await stack.redis.llen(stack.keys.inbox(`discord:${fake.ids.general}`))) === 3);

    // The interaction key expires with the token, counted from the interaction.
    for (const ix of all) {
      const pttl = await stack.redis.pttl(interactionKey(prefix, messageIdOf(ix.id)));
      expect(pttl).toBeGreaterThan(0);
      expect(pttl).toBeLessThanOrEqual(tokenLifeLeftMs(ix, Date.now()) + 50);
    }
    // While the runs are under way: only where the reply needs it.
    const during = await dumpPrefix(stack.redis, prefix);
    for (const ix of all) {
      const where = keysHolding(during, ix.token);
      expect(where.length).toBeGreaterThan(0);
      for (const key of where) expect(key).toMatch(/^(list \S+:s:discord:\d+:inbox|string \S+:s:discord:\d+:outbox|string \S+:discord:ix:discord-\d+)$/);
    }

    release();
    const original = (ix: FakeInteraction) => fake.messages.find((m) => m.id === ix.originalId);
    await waitFor('the folded answer', () => original(three)?.content === 'together: two + three', 20_000);
    await waitFor('the folded /ask points at the answer', () => original(two)?.content === FOLDED_NOTE, 10_000);
    expect(original(one)?.content).toBe('first answer');
    await waitFor(
      'both runs settled',
      async () =>
        (await stack.queue.getJobCounts('completed')).completed === 2 && !(await stack.redis.exists(stack.keys.outbox(`discord:${fake.ids.general}`))),
    );

    const after = await dumpPrefix(stack.redis, prefix);
    expect(after.some((d) => d.key.endsWith(':history'))).toBe(true); // the dump reads what the runs wrote
    for (const ix of all) {
      expect([ix.id, keysHolding(after, ix.token)]).toEqual([ix.id, []]);
      expect(await stack.redis.exists(interactionKey(prefix, messageIdOf(ix.id)))).toBe(0);
    }
  }, 60_000);
});
