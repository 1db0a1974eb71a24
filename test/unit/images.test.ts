import { mkdtemp, rm, truncate, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateTokens, IMAGE_TOKENS } from '../../src/agent/budget.js';
import { compactTurn, IMAGE_NOT_KEPT } from '../../src/agent/history.js';
import type { ChatMessage } from '../../src/agent/types.js';
import type { Attachment, InboundMessage } from '../../src/channels/types.js';
import { createLogger } from '../../src/log.js';
import type { SavedAttachment } from '../../src/session/journal.js';
import { imagesOf, sniffImage } from '../../src/run/input/images.js';
import { recordTranscript } from '../../src/run/record.js';
import { toUserMessage } from '../../src/run/input/user-message.js';
import { Workspace } from '../../src/tools/workspace.js';

/** The smallest valid 1×1 PNG. */
const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
const JPEG_HEAD = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0, 0x10, 0x4a, 0x46, 0x49, 0x46, 0]);

describe('sniffImage: the type from the first bytes, not the name', () => {
  it('knows png, jpeg, gif and webp, and nothing else', () => {
    expect(sniffImage(PNG_1X1)).toBe('image/png');
    expect(sniffImage(JPEG_HEAD)).toBe('image/jpeg');
    expect(sniffImage(Buffer.from('GIF89a\x01\x00\x01\x00', 'latin1'))).toBe('image/gif');
    expect(sniffImage(Buffer.from('RIFF\x24\x00\x00\x00WEBPVP8 ', 'latin1'))).toBe('image/webp');
    expect(sniffImage(Buffer.from('RIFF\x24\x00\x00\x00WAVEfmt ', 'latin1'))).toBeUndefined();
    expect(sniffImage(Buffer.from('%PDF-1.7\n'))).toBeUndefined();
    expect(sniffImage(Buffer.from('PN'))).toBeUndefined();
    expect(sniffImage(new Uint8Array())).toBeUndefined();
  });
});

describe('images of a turn (MODEL_VISION)', () => {
  let root: string;
  let ws: Workspace;
  const log = createLogger('silent');
  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'sb-images-'));
    ws = new Workspace(root);
    await mkdir(join(root, 'uploads'), { recursive: true });
    await writeFile(join(root, 'uploads', 'shot.png'), PNG_1X1);
    // Named .png, but a JPEG: the data URL says what it is.
    await writeFile(join(root, 'uploads', 'photo.png'), Buffer.concat([JPEG_HEAD, Buffer.alloc(100)]));
    await writeFile(join(root, 'uploads', 'big.png'), PNG_1X1);
    await truncate(join(root, 'uploads', 'big.png'), 6_000_000);
    await writeFile(join(root, 'uploads', 'notes.txt'), 'just text');
  });
  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const attachment = (name: string, size: number): Attachment => ({ name, ref: name, size });

  it('shows small images as data URLs after the text, names a large one, and leaves other files as paths', async () => {
    const a = [
      attachment('shot.png', PNG_1X1.length),
      attachment('photo.png', 111),
      attachment('big.png', 6_000_000),
      attachment('notes.txt', 9),
      attachment('lost.png', 10),
    ];
    const saved = new Map<Attachment, SavedAttachment>([
      [a[0]!, { path: 'uploads/shot.png' }],
      [a[1]!, { path: 'uploads/photo.png' }],
      [a[2]!, { path: 'uploads/big.png' }],
      [a[3]!, { path: 'uploads/notes.txt' }],
      [a[4]!, { error: 'download failed' }],
    ]);
    const images = await imagesOf(ws, saved, 5_000_000, log);
    expect([...images.keys()]).toEqual([a[0], a[1], a[2]]);

    const message: InboundMessage = {
      v: 1,
      id: 'm1',
      platform: 'telegram',
      conversation: '1',
      sender: { id: '1' },
      text: 'what is this?',
      attachments: a,
      eventId: 'e1',
      receivedAt: 0,
    };
    const user = toUserMessage(message, saved, images);
    expect(Array.isArray(user.content)).toBe(true);
    const parts = user.content as { type: string; text?: string; image_url?: { url: string } }[];
    expect(parts.map((p) => p.type)).toEqual(['text', 'image_url', 'image_url']);
    expect(parts[0]!.text).toBe(
      'what is this?\n\n[Attached files, in the workspace:]\n' +
        '- uploads/shot.png (70 B): image 1 below\n' +
        '- uploads/photo.png (111 B): image 2 below\n' +
        '- uploads/big.png (5.7 MB): an image over the 5 MB limit for pictures (IMAGE_MAX_BYTES), not shown to you\n' +
        '- uploads/notes.txt (9 B)\n' +
        '- lost.png (10 B): not saved, download failed',
    );
    expect(parts[1]!.image_url!.url).toBe(`data:image/png;base64,${PNG_1X1.toString('base64')}`);
    expect(parts[2]!.image_url!.url.startsWith('data:image/jpeg;base64,/9j/')).toBe(true);

    // Without vision the same message is the text alone, as before.
    expect(toUserMessage(message, saved).content).toBe(
      'what is this?\n\n[Attached files, in the workspace:]\n- uploads/shot.png (70 B)\n- uploads/photo.png (111 B)\n- uploads/big.png (5.7 MB)\n- uploads/notes.txt (9 B)\n- lost.png (10 B): not saved, download failed',
    );
  });

  it('counts an image as a fixed number of tokens, not its base64', () => {
    const text: ChatMessage = { role: 'user', content: [{ type: 'text', text: 'hi' }] };
    const big = `data:image/png;base64,${'A'.repeat(4_000_000)}`;
    const withImage: ChatMessage = {
      role: 'user',
      content: [
        { type: 'text', text: 'hi' },
        { type: 'image_url', image_url: { url: big } },
      ],
    };
    const extra = estimateTokens([withImage]) - estimateTokens([text]);
    expect(extra).toBeGreaterThanOrEqual(IMAGE_TOKENS);
    expect(extra).toBeLessThan(IMAGE_TOKENS + 50);
  });

  it('history and run records keep a line instead of the picture', () => {
    const turn: ChatMessage[] = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } },
        ],
      },
      { role: 'assistant', content: 'a cat' },
    ];
    const expected = [
      {
        role: 'user',
        content: [
          { type: 'text', text: 'look' },
          { type: 'text', text: IMAGE_NOT_KEPT },
        ],
      },
      turn[1],
    ];
    expect(compactTurn(turn, 1000)).toEqual(expected);
    expect(recordTranscript(turn)).toEqual(expected);
    expect(JSON.stringify(compactTurn(turn, 1000))).not.toContain('base64');
  });
});
