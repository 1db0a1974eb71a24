import type { Redis } from 'ioredis';
import type { RedisKeys } from '../queue/keys.js';

/** `platform:userId`: one platform user (and the form of every person id). */
export const IDENTITY = /^(telegram|slack|discord|terminal):[^\s:]+$/;

/**
 * Who a platform user is, for memory: themselves (`platform:userId`), unless the operator linked
 * that identity to another one (`npm run admin -- identity link telegram:42 slack:U0123`). Links
 * are never made from a chat: a person cannot claim someone else's memory.
 */
export class Identities {
  constructor(
    private readonly redis: Redis,
    private readonly keys: RedisKeys,
  ) {}

  /** The person id of one platform user. */
  async personOf(platform: string, userId: string): Promise<string> {
    const self = `${platform}:${userId}`;
    return (await this.redis.get(this.keys.identity(self))) ?? self;
  }

  /** Makes `other` the same person as `identity` (whose person id stays). Both are `platform:userId`. */
  async link(identity: string, other: string): Promise<string> {
    for (const id of [identity, other]) if (!IDENTITY.test(id)) throw new Error(`"${id}" is not platform:userId (e.g. telegram:42, slack:U0123ABC)`);
    if (identity === other) throw new Error('an identity is already itself');
    const [platform, user] = splitIdentity(identity);
    const person = await this.personOf(platform, user);
    await this.redis.set(this.keys.identity(other), person);
    return person;
  }

  /** Undoes a link: `identity` is its own person again. False when it was not linked. */
  async unlink(identity: string): Promise<boolean> {
    return (await this.redis.del(this.keys.identity(identity))) === 1;
  }
}

function splitIdentity(id: string): [string, string] {
  const at = id.indexOf(':');
  return [id.slice(0, at), id.slice(at + 1)];
}

/** The owner of a channel's shared memory (MEMORY=person+channel): `channel:<platform>:<the channel, a thread's parent>`. */
export function channelOwner(platform: string, channel: string): string {
  return `channel:${platform}:${channel}`;
}
