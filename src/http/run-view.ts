import type { ChatMessage } from '../agent/types.js';
import { clip } from '../lib/text.js';
import type { JournalEntry } from '../session/journal.js';
import type { RunRecord } from '../run/record.js';
import { escapeHtml as e, page } from './html.js';

function contentText(m: ChatMessage): string {
  const c = m.content;
  if (typeof c === 'string') return c;
  if (Array.isArray(c)) return c.map((p) => ('text' in p ? p.text : `[${p.type}]`)).join('');
  return '';
}

function message(m: ChatMessage): string {
  const calls =
    m.role === 'assistant' && m.tool_calls?.length
      ? m.tool_calls
          .map((c) =>
            'function' in c
              ? `<div>→ tool call <b>${e(c.function.name)}</b> <span class="muted">${e(c.id)}</span><pre>${e(c.function.arguments)}</pre></div>`
              : '',
          )
          .join('')
      : '';
  const id = m.role === 'tool' ? ` <span class="muted">for ${e(m.tool_call_id)}</span>` : '';
  const text = contentText(m);
  return `<div class="msg ${e(m.role)}"><div class="role">${e(m.role)}${id}</div>${text ? `<pre>${e(text)}</pre>` : ''}${calls}</div>`;
}

/** One journal entry as a table row: its kind and the fields that say what happened. */
function journalRow(entry: JournalEntry): string {
  const { t, ...rest } = entry;
  const detail = JSON.stringify(rest, (key, value: unknown) => (key === 'content' && typeof value === 'string' ? clip(value, 300) : value));
  return `<tr><td>${e(t)}</td><td><code>${e(detail)}</code></td></tr>`;
}

/** A scheduled turn says which schedule and which firing it answers. */
function scheduledRow(run: RunRecord): string {
  const mark = run.messages.find((m) => m.scheduled)?.scheduled;
  if (!mark) return '';
  return `<dt>scheduled</dt><dd><span class="state scheduled">scheduled</span> ${e(mark.id)} “${e(mark.name)}”, firing of ${e(new Date(mark.firedAt).toISOString())} (${e(mark.tz)})</dd>`;
}

/** The run view: summary, transcript (user → assistant with tool calls → tool results → final), timeline, delivered ids. */
export function renderRunView(run: RunRecord, links: { dashboard: string }): string {
  const seconds = ((run.endedAt - run.startedAt) / 1000).toFixed(2);
  const timeline = run.timeline
    .map(
      (t) =>
        `<tr><td>${t.ms}</td><td>${t.step ?? ''}</td><td>${e(t.type)}</td><td>${e(t.tool ?? '')}</td><td>${t.durationMs ?? ''}</td><td>${t.ok === false ? '✗ ' : ''}${e(t.text ?? '')}</td></tr>`,
    )
    .join('');
  return page(
    `Run ${run.runId}`,
    `<p><a href="${e(links.dashboard)}">← dashboard</a></p>
<h1>Run ${e(run.runId)} <span class="state ${e(run.state)}">${e(run.state)}${run.reason ? `: ${e(run.reason)}` : ''}</span></h1>
<dl>
<dt>session</dt><dd>${e(run.session)}</dd>
${run.agent ? `<dt>agent</dt><dd>${e(run.agent)}</dd>` : ''}
<dt>job</dt><dd>${e(run.jobId)}</dd>
<dt>started</dt><dd>${e(new Date(run.startedAt).toISOString())} (${seconds} s)</dd>
${run.detail ? `<dt>detail</dt><dd>${e(run.detail)}</dd>` : ''}
<dt>steps</dt><dd>${run.steps} steps, ${run.modelCalls} model calls, ${run.toolCalls} tool calls</dd>
<dt>tokens</dt><dd>${run.usage.promptTokens} prompt + ${run.usage.completionTokens} completion = ${run.usage.totalTokens}</dd>
<dt>messages</dt><dd>${run.messages.map((m) => `${e(m.platform)} ${e(m.id)}`).join('<br>')}</dd>
${scheduledRow(run)}
<dt>delivered</dt><dd>${run.delivered.length ? run.delivered.map((id) => `<code>${e(id)}</code>`).join(', ') : '<span class="muted">nothing</span>'}</dd>
${run.undeliverable ? `<dt>undeliverable</dt><dd>${e(run.undeliverable)}</dd>` : ''}
</dl>
<h2>Transcript</h2>
${run.transcript.map(message).join('\n')}
<h2>Timeline</h2>
<table><thead><tr><th>ms</th><th>step</th><th>event</th><th>tool</th><th>took ms</th><th>detail</th></tr></thead><tbody>${timeline}</tbody></table>
<h2>Journal</h2>
<p class="muted">What was written down before it happened: the turn's steps (from every run that worked on it), then each piece of the reply.</p>
<table><thead><tr><th>entry</th><th>detail</th></tr></thead><tbody>${(run.journal ?? []).map(journalRow).join('')}</tbody></table>`,
  );
}
