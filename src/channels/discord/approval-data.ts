/**
 * An approval button's `custom_id` (Discord allows 1 to 100 characters, unique within a message):
 * `sb:approval:<approval id>:<approve|deny>`. The pair below is the only place that writes or reads it.
 */
const PATTERN = /^sb:approval:([A-Za-z0-9_-]{1,40}):(approve|deny)$/;

export function approvalCustomId(id: string, decision: 'approved' | 'denied'): string {
  return `sb:approval:${id}:${decision === 'approved' ? 'approve' : 'deny'}`;
}

export function parseApprovalCustomId(customId: string): { id: string; decision: 'approved' | 'denied' } | null {
  const m = PATTERN.exec(customId);
  return m ? { id: m[1]!, decision: m[2] === 'approve' ? 'approved' : 'denied' } : null;
}
