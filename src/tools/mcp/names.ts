import { createHash } from 'node:crypto';

/** OpenAI's rule for function names: ^[a-zA-Z0-9_-]{1,64}$. */
export const MAX_TOOL_NAME = 64;
/** When a name must be shortened, the server part keeps at least this much (more when the tool's name is short). */
const SERVER_KEEP = 20;
/** Hash lengths tried in turn until every name is unique (40 only if 8 and 16 hex characters ever collide). */
const HASH_LENGTHS = [8, 16, 40] as const;

export interface McpToolRef {
  readonly server: string;
  readonly tool: string;
}

/** Every character outside [A-Za-z0-9_-] becomes "_". */
export function sanitiseNamePart(part: string): string {
  return part.replace(/[^A-Za-z0-9_-]/g, '_');
}

/**
 * The names the model sees for these MCP tools, in the same order: `<server>__<tool>`, sanitised.
 * A name over 64 characters, or one that two different tools would share once sanitised, becomes
 * `<server start>__<tool start>_<hash>`, the hash taken over the exact server and tool names, so
 * it is unique and the same for the same tool whatever else is listed. Pure and deterministic.
 */
export function mcpToolNames(refs: readonly McpToolRef[]): string[] {
  const plain = refs.map((r) => `${sanitiseNamePart(r.server)}__${sanitiseNamePart(r.tool)}`);
  const owners = new Map<string, Set<string>>();
  plain.forEach((name, i) => {
    const set = owners.get(name) ?? new Set<string>();
    set.add(refKey(refs[i]!));
    owners.set(name, set);
  });
  const hashLength: number[] = plain.map((name) => (name.length > MAX_TOOL_NAME || owners.get(name)!.size > 1 ? 0 : -1));

  for (;;) {
    const names = refs.map((r, i) => {
      const level = hashLength[i]!;
      return level < 0 ? plain[i]! : shortened(r, HASH_LENGTHS[level]!);
    });
    const clash = clashing(names, refs);
    if (clash.length === 0) return names;
    let raised = false;
    for (const i of clash) {
      // A plain name that meets a hashed one is hashed too; a hashed one gets a longer hash.
      if (hashLength[i]! < HASH_LENGTHS.length - 1) {
        hashLength[i] = hashLength[i]! + 1;
        raised = true;
      }
    }
    if (!raised) throw new Error(`cannot give unique names to MCP tools: ${clash.map((i) => refKey(refs[i]!)).join(', ')}`);
  }
}

function shortened(ref: McpToolRef, hashChars: number): string {
  const s = sanitiseNamePart(ref.server);
  const t = sanitiseNamePart(ref.tool);
  const suffix = `_${createHash('sha256').update(refKey(ref)).digest('hex').slice(0, hashChars)}`;
  const budget = MAX_TOOL_NAME - suffix.length - 2;
  if (s.length + t.length <= budget) return `${s}__${t}${suffix}`;
  const serverChars = Math.min(s.length, Math.max(SERVER_KEEP, budget - t.length));
  return `${s.slice(0, serverChars)}__${t.slice(0, budget - serverChars)}${suffix}`;
}

/** Indexes of names shared by different tools (the same tool listed twice is not a clash). */
function clashing(names: readonly string[], refs: readonly McpToolRef[]): number[] {
  const byName = new Map<string, number[]>();
  names.forEach((n, i) => byName.set(n, [...(byName.get(n) ?? []), i]));
  const out: number[] = [];
  for (const idx of byName.values()) {
    if (new Set(idx.map((i) => refKey(refs[i]!))).size > 1) out.push(...idx);
  }
  return out;
}

/** JSON keeps the pair apart: server "a__b" + tool "c" and server "a" + tool "b__c" differ. */
function refKey(ref: McpToolRef): string {
  return JSON.stringify([ref.server, ref.tool]);
}
