/**
 * Which tools a conversation gets, and which wait for a person's approval: `TOOLS_DENY` and
 * `TOOLS_APPROVE` entries are a tool name (everywhere) or `platform:tool` (only there). A denied
 * tool is not offered to the model at all, so it costs no tokens and cannot be called. An agent's
 * `allow` list (AGENTS_CONFIG), when it has one, offers only the tools it names, less the denied.
 */
export class ToolPolicy {
  private readonly deny: Rule[];
  private readonly approve: Rule[];
  private readonly allow: Rule[] | undefined;

  constructor(lists: { deny?: readonly string[]; approve?: readonly string[]; allow?: readonly string[] } = {}) {
    this.deny = (lists.deny ?? []).map(parseRule);
    this.approve = (lists.approve ?? []).map(parseRule);
    this.allow = lists.allow?.map(parseRule);
  }

  offered(platform: string, tool: string): boolean {
    if (this.allow && !this.allow.some((r) => matches(r, platform, tool))) return false;
    return !this.deny.some((r) => matches(r, platform, tool));
  }

  needsApproval(platform: string, tool: string): boolean {
    return this.approve.some((r) => matches(r, platform, tool));
  }
}

interface Rule {
  platform?: string;
  tool: string;
}

function parseRule(entry: string): Rule {
  const at = entry.indexOf(':');
  return at < 0 ? { tool: entry } : { platform: entry.slice(0, at), tool: entry.slice(at + 1) };
}

const matches = (r: Rule, platform: string, tool: string) => r.tool === tool && (r.platform === undefined || r.platform === platform);

/**
 * Who may decide an approval (APPROVAL_BY): `requester` — the person whose message started the
 * run; `approvers` — only those named in APPROVERS (`platform:userId`, for any conversation on that
 * platform), so nobody approves their own call; `either`.
 */
export type ApprovalBy = 'requester' | 'approvers' | 'either';

export interface ApprovalRule {
  by: ApprovalBy;
  approvers: readonly string[];
}

export function mayDecide(rule: ApprovalRule, platform: string, userId: string, requesterId: string): boolean {
  const isApprover = rule.approvers.includes(`${platform}:${userId}`);
  const isRequester = userId === requesterId;
  if (rule.by === 'approvers') return isApprover;
  if (rule.by === 'requester') return isRequester;
  return isApprover || isRequester;
}
