import { mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHash } from 'node:crypto';
import { terminalMessage } from '../../src/channels/terminal/inbound.js';
import type { OutboundAdapter } from '../../src/channels/types.js';
import { createLogger } from '../../src/log.js';
import { saveAttachments } from '../../src/run/input/attachments.js';
import { fitMessages, longMessagePath } from '../../src/run/input/long-message.js';
import { createEditFileTool } from '../../src/tools/edit-file.js';
import { resultText } from '../../src/tools/mcp/content.js';
import { createWriteFileTool } from '../../src/tools/write-file.js';
import { Workspace } from '../../src/tools/workspace.js';

/**
 * Finding (high): a message over MESSAGE_MAX_CHARS was saved through a scratch file
 * `uploads/.message-<h>.txt.partial` with a plain writeFile. A run_command plants a relative
 * symlink under that name; the next run of the turn writes the whole message through the link
 * into any file the worker can write. Here the "command" is a symlink made by the test, exactly
 * what `ln -s` in the sandbox makes, and the victim is a file outside the workspace.
 */
const log = createLogger('silent');
const VICTIM_TEXT = 'operator secret: do not touch\n';
let base: string;
let ws: Workspace;
let victim: string;
let outsideDir: string;

beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'sb-sec-links-'));
  await mkdir(join(base, 'root', 'session'), { recursive: true });
  ws = new Workspace(join(base, 'root', 'session'));
  outsideDir = join(base, 'root', 'other-session');
  await mkdir(outsideDir);
  victim = join(outsideDir, 'victim.txt');
  await writeFile(victim, VICTIM_TEXT);
});
afterEach(async () => rm(base, { recursive: true, force: true }));

async function victimUntouched(): Promise<void> {
  expect(await readFile(victim, 'utf8')).toBe(VICTIM_TEXT);
  expect((await readdir(outsideDir)).sort()).toEqual(['victim.txt']);
}

const LONG = `${'x'.repeat(200)}ATTACKER-CONTROLLED-TAIL`;

describe('security: the long-message scratch file cannot be turned into a write anywhere', () => {
  it('a symlink planted under the scratch name (relative, into another session) is not written through', async () => {
    const message = terminalMessage('s', LONG, 'mallory');
    const hash = createHash('sha256').update(message.id).digest('hex').slice(0, 12);
    await mkdir(join(ws.root, 'uploads'));
    // What `ln -s ../../other-session/victim.txt uploads/.message-<h>.txt.partial` makes.
    await symlink('../../other-session/victim.txt', join(ws.root, 'uploads', `.message-${hash}.txt.partial`));
    const [fitted] = await fitMessages(ws, [message], 100, log);
    await victimUntouched();
    // The message itself is not lost: it is saved under its real name.
    expect(await readFile(join(ws.root, longMessagePath(message)), 'utf8')).toBe(LONG);
    expect(fitted!.text).toContain(`saved in full at ${longMessagePath(message)}`);
  });

  it('a symlink planted under the final name, or an uploads folder that is a link, is refused and the note says the rest is missing', async () => {
    const message = terminalMessage('s', LONG, 'mallory');
    await mkdir(join(ws.root, 'uploads'));
    await symlink('../../other-session/victim.txt', join(ws.root, longMessagePath(message)));
    const [first] = await fitMessages(ws, [message], 100, log);
    expect(first!.text).toContain('Saving the rest failed');
    await victimUntouched();

    await rm(join(ws.root, 'uploads'), { recursive: true });
    await symlink('../other-session', join(ws.root, 'uploads'));
    const [second] = await fitMessages(ws, [message], 100, log);
    expect(second!.text).toContain('Saving the rest failed');
    await victimUntouched();
  });
});

describe('security: no writer follows a link planted in the workspace', () => {
  // Every place the worker writes, each given a path whose folder or file is a link out of the workspace.
  const writers: Record<string, (ws: Workspace) => Promise<unknown>> = {
    write_file: (w) =>
      createWriteFileTool(w)
        .execute({ path: 'out/victim.txt', content: 'pwned' }, { signal: new AbortController().signal })
        .catch((e: unknown) => e),
    edit_file: (w) =>
      createEditFileTool(w)
        .execute({ path: 'in/victim.txt', old_text: 'secret', new_text: 'pwned' }, { signal: new AbortController().signal })
        .catch((e: unknown) => e),
    attachment: (w) =>
      saveAttachments(
        fakeDownloads,
        w,
        [{ ...terminalMessage('s', 'see file', 'mallory'), attachments: [{ ref: 'a', name: 'victim.txt', size: 5 }] }],
        1_000,
        new AbortController().signal,
        log,
      ),
    mcp_image: (w) =>
      resultText(
        { content: [{ type: 'image', data: Buffer.from('pwned').toString('base64'), mimeType: 'image/png' }] },
        { ws: w, server: 'evil', tool: 'shot' },
      ).catch((e: unknown) => e),
  };

  for (const [name, write] of Object.entries(writers)) {
    it(`${name}: a folder link (uploads, mcp/<server>, out/) and a file link are not followed`, async () => {
      // Links a command could plant: folders leading into another session, and a file link.
      await symlink('../other-session', join(ws.root, 'uploads'));
      await symlink('../other-session', join(ws.root, 'out'));
      await mkdir(join(ws.root, 'mcp'));
      await symlink('../../other-session', join(ws.root, 'mcp', 'evil'));
      await mkdir(join(ws.root, 'in'));
      await symlink('../../other-session/victim.txt', join(ws.root, 'in', 'victim.txt'));
      await write(ws);
      await victimUntouched();
    });
  }
});

const fakeDownloads = {
  platform: 'terminal',
  download: async () => new TextEncoder().encode('pwned'),
} as unknown as OutboundAdapter;
