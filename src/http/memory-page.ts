import express, { type Express, type RequestHandler } from 'express';
import type { Logger } from '../log.js';
import { MemoryAdminError, type AgentMemory, type MemoryAdmin, type MemoryListing } from '../memory/admin.js';
import { escapeHtml, page } from './html.js';
import { agentParam, nothingDeleted } from './memory-api.js';

const PATH = '/admin/memory';

const one = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
const time = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').slice(0, 16);

/**
 * /admin/memory?person=<id>: a person's memory per agent, with an Export link and Delete forms
 * (POST /admin/memory/delete: a form cannot send DELETE). Behind `guard`; no form in read-only mode.
 */
export function mountMemoryPage(app: Express, admin: MemoryAdmin, guard: RequestHandler[], readonly: boolean, log: Logger): void {
  const refuse = (res: express.Response, status: number, person: string, error: string): void =>
    void res
      .status(status)
      .type('html')
      .send(render(undefined, { readonly, asked: person, error }));
  app.get(PATH, ...guard, async (req, res) => {
    const person = one(req.query.person);
    const deleted = one(req.query.deleted);
    if (person === undefined) return void res.type('html').send(render(undefined, { readonly }));
    try {
      res.type('html').send(render(await admin.list(person), { readonly, asked: person, ...(deleted !== undefined && { deleted }) }));
    } catch (err) {
      if (!(err instanceof MemoryAdminError)) throw err;
      refuse(res, 400, person, err.message);
    }
  });

  app.post(`${PATH}/delete`, ...guard, express.urlencoded({ extended: false, limit: '4kb' }), async (req, res) => {
    const body = (req.body ?? {}) as Record<string, unknown>;
    const person = one(body.person) ?? '';
    if (readonly) return refuse(res, 403, person, 'read-only mode (ADMIN_READONLY=1)');
    try {
      const agent = agentParam(body.agent);
      const done = await admin.delete(person, agent);
      log.info({ person: done.person, agent, deleted: done.deleted }, 'operator deleted memory');
      const note = done.deleted > 0 ? `deleted ${done.deleted} entr${done.deleted === 1 ? 'y' : 'ies'}` : nothingDeleted(done, agent);
      res.redirect(303, `${PATH}?${new URLSearchParams({ person, deleted: note })}`);
    } catch (err) {
      if (!(err instanceof MemoryAdminError)) throw err;
      refuse(res, 400, person, err.message);
    }
  });
}

interface View {
  readonly: boolean;
  asked?: string;
  error?: string;
  deleted?: string;
}

function render(listing: MemoryListing | undefined, view: View): string {
  const out = ['<h1>Memory</h1>', '<p class="muted"><a href="/admin/queues">dashboard</a></p>'];
  out.push(
    `<form method="get" action="${PATH}"><label>Person, identity or channel (e.g. telegram:42)<input name="person" value="${escapeHtml(view.asked ?? '')}"></label><button type="submit">Show</button></form>`,
  );
  if (view.error) out.push(`<p style="color:#8a1c1c">${escapeHtml(view.error)}</p>`);
  if (view.deleted) out.push(`<p><strong>${escapeHtml(view.deleted)}</strong></p>`);
  if (listing) out.push(...shown(listing, view.readonly));
  return page(listing ? `Memory of ${listing.person}` : 'Memory', out.join('\n'));
}

function shown(listing: MemoryListing, readonly: boolean): string[] {
  const asked = listing.resolvedFrom ?? listing.person;
  const out = [`<h2>${escapeHtml(listing.person)}</h2>`];
  if (listing.resolvedFrom) out.push(`<p class="muted">${escapeHtml(listing.resolvedFrom)} is linked to this person.</p>`);
  const total = listing.agents.reduce((n, a) => n + a.entries.length, 0) + (listing.beforeLink ?? []).reduce((n, a) => n + a.entries.length, 0);
  if (total === 0) return [...out, '<p>Nothing is remembered about this person.</p>'];
  out.push(`<p><a href="/admin/api/memory/${encodeURIComponent(asked)}/export">Export (JSON)</a></p>`);
  for (const m of listing.agents) out.push(...agentBlock(m, asked, readonly));
  if (listing.beforeLink) {
    out.push(
      `<h2>${escapeHtml(listing.resolvedFrom)} before it was linked</h2>`,
      '<p class="muted">No agent reads this any more; deleting the person deletes it too.</p>',
    );
    for (const m of listing.beforeLink) out.push(...agentBlock(m, asked, true));
  }
  out.push(
    readonly ? '<p class="muted">Read-only mode (ADMIN_READONLY=1): nothing can be deleted here.</p>' : deleteForm(asked, undefined, `Delete all ${total}`),
  );
  return out;
}

function agentBlock(m: AgentMemory, asked: string, readonly: boolean): string[] {
  const rows = m.entries.map(
    (e) =>
      `<tr><td><code>${escapeHtml(e.id)}</code></td><td>${escapeHtml(e.text)}</td><td>${e.state}</td><td>${e.provenance}</td><td>${time(e.createdAt)}</td><td>${time(e.usedAt)}</td></tr>`,
  );
  return [
    `<h3>agent ${escapeHtml(m.agent)} (${m.entries.length})</h3>`,
    `<table><tr><th>id</th><th>text</th><th>state</th><th>from</th><th>created (UTC)</th><th>used (UTC)</th></tr>${rows.join('')}</table>`,
    ...(readonly ? [] : [deleteForm(asked, m.agent, `Delete ${escapeHtml(m.agent)}'s ${m.entries.length}`)]),
  ];
}

function deleteForm(person: string, agent: string | undefined, label: string): string {
  const hidden = `<input type="hidden" name="person" value="${escapeHtml(person)}">${agent === undefined ? '' : `<input type="hidden" name="agent" value="${escapeHtml(agent)}">`}`;
  return `<form method="post" action="${PATH}/delete" style="margin:8px 0">${hidden}<button type="submit">${label}</button></form>`;
}
