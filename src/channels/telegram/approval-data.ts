/**
 * An approval button's callback_data (Telegram allows 64 bytes): `ap:<approval id>:<y|n>`.
 * The pair below is the only place that writes or reads it.
 */
export function approvalData(id: string, decision: 'approved' | 'denied'): string {
  return `ap:${id}:${decision === 'approved' ? 'y' : 'n'}`;
}

export function parseApprovalData(data: string): { id: string; decision: 'approved' | 'denied' } | null {
  const m = /^ap:([A-Za-z0-9_-]{1,40}):([yn])$/.exec(data);
  return m ? { id: m[1]!, decision: m[2] === 'y' ? 'approved' : 'denied' } : null;
}
