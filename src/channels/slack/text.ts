/**
 * Slack message text (mrkdwn with `<…>` control sequences and &amp; &lt; &gt; entities) as the
 * plain text the model reads: the bot's own mention removed, other mentions, channels and links
 * made readable.
 */

const TOKEN = /<([^<>]*)>|&(lt|gt|amp);/g;
const ENTITY: Record<string, string> = { lt: '<', gt: '>', amp: '&' };

function decodeEntities(text: string): string {
  return text.replace(/&(lt|gt|amp);/g, (_m, name: string) => ENTITY[name]!);
}

function readable(inner: string): string {
  const bar = inner.indexOf('|');
  const target = bar < 0 ? inner : inner.slice(0, bar);
  const label = bar < 0 ? undefined : inner.slice(bar + 1);
  switch (target[0]) {
    case '@':
      return `@${label ?? target.slice(1)}`;
    case '#':
      return `#${label ?? target.slice(1)}`;
    case '!': {
      // <!here>, <!channel>, <!subteam^S1|@team>, <!date^…|fallback>
      if (label !== undefined) return label;
      return `@${target.slice(1).split('^')[0] ?? ''}`;
    }
    default: {
      const url = target.startsWith('mailto:') ? target.slice('mailto:'.length) : target;
      if (label === undefined || label === url || label === url.replace(/^https?:\/\//, '')) return url;
      return `${label} (${url})`;
    }
  }
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** The user's words: `botUserId`'s mentions removed, everything else readable. */
export function slackToPlain(text: string, botUserId?: string): string {
  const withoutBot = botUserId ? text.replace(new RegExp(`[ \\t]*<@${escapeRegExp(botUserId)}(?:\\|[^<>]*)?>[ \\t]*`, 'g'), ' ') : text;
  return withoutBot
    .replace(TOKEN, (_m, inner: string | undefined, entity: string | undefined) => (inner !== undefined ? readable(decodeEntities(inner)) : ENTITY[entity!]!))
    .trim();
}

/** Whether the text mentions `botUserId` (`<@U…>` or `<@U…|name>`). */
export function mentions(text: string, botUserId: string | undefined): boolean {
  if (!botUserId) return false;
  return text.includes(`<@${botUserId}>`) || text.includes(`<@${botUserId}|`);
}
