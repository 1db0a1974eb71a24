/**
 * An approval card's buttons: the decision is the button's fixed `action_id` (`sb_approve` /
 * `sb_deny`, what the gateway's Bolt listener matches), the approval id rides in its `value` as
 * `ap:<approval id>`. The pair below is the only place that writes or reads them.
 */
export const APPROVE_ACTION_ID = 'sb_approve';
export const DENY_ACTION_ID = 'sb_deny';
/** The action ids of both buttons (the gateway's `app.action` constraint). */
export const APPROVAL_ACTION_IDS = /^sb_(approve|deny)$/;

export function approvalAction(id: string, decision: 'approved' | 'denied'): { action_id: string; value: string } {
  return { action_id: decision === 'approved' ? APPROVE_ACTION_ID : DENY_ACTION_ID, value: `ap:${id}` };
}

export function parseApprovalAction(action: { action_id?: string; value?: string }): { id: string; decision: 'approved' | 'denied' } | null {
  const decision = action.action_id === APPROVE_ACTION_ID ? 'approved' : action.action_id === DENY_ACTION_ID ? 'denied' : undefined;
  const m = /^ap:([A-Za-z0-9_-]{1,40})$/.exec(action.value ?? '');
  return decision && m ? { id: m[1]!, decision } : null;
}
