import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startStack, type Stack } from '../helpers/stack.js';
import { waitFor } from '../helpers/processes.js';
import { terminalMessage } from '../../src/channels/terminal/inbound.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const TOKEN = 'browser-test-admin-token';
const DOCS = fileURLToPath(new URL('../../docs/', import.meta.url));
// Flags for a machine without network: no background fetches, no sandbox as root.
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

describe('the dashboard in a real browser', () => {
  let stack: Stack;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium (or set CHROMIUM_PATH)`);
    stack = await startStack('browser', { ADMIN_TOKEN: TOKEN, AGENT_MAX_STEPS: '2' });
    await mkdir(`${stack.workspaceRoot}/terminal%3Ateam`, { recursive: true });
    await writeFile(`${stack.workspaceRoot}/terminal%3Ateam/plan.md`, '# Plan\n- ship the pipeline\n- write the docs\n');
    stack.fake.script([
      { content: 'Let me read the plan.', toolCalls: [{ id: 'call_plan', name: 'read_file', arguments: '{"path":"plan.md"}' }] },
      { content: 'The plan has two items: **ship the pipeline** and **write the docs**.' },
      { content: 'Let me look around.', toolCalls: [{ id: 'call_a', name: 'list_files', arguments: '{}' }] },
      { content: 'Still looking.', toolCalls: [{ id: 'call_b', name: 'search_files', arguments: '{"pattern":"TODO"}' }] },
    ]);
    await stack.gateway.intake.accept(terminalMessage('team', 'What is in plan.md?', 'ana'));
    await waitFor('the completed run', async () => (await stack.queue.getJobCounts('completed')).completed === 1);
    await stack.gateway.intake.accept(terminalMessage('loop', 'Find every TODO and fix it', 'ben'));
    await waitFor('the failed run', async () => (await stack.queue.getJobCounts('failed')).failed === 1);

    browser = await chromium.launch({ executablePath: CHROMIUM, args: FLAGS });
    const context = await browser.newContext({ httpCredentials: { username: 'ops', password: TOKEN }, viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('shows the queue, a completed job with its narration, a failed job with its reason, and the run view', async () => {
    await page.goto(`${stack.baseUrl}/admin/queues`);
    await page.getByText('agent runs').first().waitFor();
    await page.screenshot({ path: `${DOCS}dashboard.png` });

    const [done] = await stack.queue.getJobs(['completed']);
    await page.goto(`${stack.baseUrl}/admin/queues/queue/runs/${done!.id}`);
    await page.getByText('terminal team: What is in plan.md?').first().waitFor();
    await page.getByText('Logs', { exact: true }).click();
    await page.getByText('assistant: Let me read the plan.').first().waitFor();
    await page
      .getByText(/tool read_file ok in \d+ ms/)
      .first()
      .waitFor();
    await page.screenshot({ path: `${DOCS}dashboard-job-logs.png` });

    const [failed] = await stack.queue.getJobs(['failed']);
    await page.goto(`${stack.baseUrl}/admin/queues/queue/runs/${failed!.id}`);
    await page.getByText('Error', { exact: true }).click();
    await page
      .getByText(/failed: step_limit/)
      .first()
      .waitFor();

    // The job's "run view" link (bull-board opens it in a new tab; follow it here).
    const href = await page
      .getByRole('link', { name: /run view/i })
      .first()
      .getAttribute('href');
    expect(href).toBe(`/admin/jobs/${failed!.id}`);
    await page.goto(`${stack.baseUrl}${href}`);
    await page.waitForURL(/\/admin\/runs\//);
    await page.getByText('Run ').first().waitFor();
    const body = await page.textContent('body');
    expect(body).toContain('failed: step_limit');
    expect(body).toContain('Find every TODO and fix it');
    expect(body).toContain('search_files');

    await page.goto(`${stack.baseUrl}/admin/runs/${done!.data.runId ?? (await stack.queue.getJob(done!.id!))!.data.runId}`);
    await page.getByText('ship the pipeline').first().waitFor();
    expect(await page.textContent('body')).toContain('call_plan');
    await page.screenshot({ path: `${DOCS}run-view.png`, fullPage: true });
  }, 60_000);
});
