import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatMessage } from '../../../src/agent/types.js';
import { IMAGE_NOT_KEPT } from '../../../src/agent/history.js';
import { waitFor } from '../../helpers/processes.js';
import { TelegramHarness } from './harness.js';

const PNG_1X1 = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64');
type Part = { type: string; text?: string; image_url?: { url: string } };

describe('telegram with MODEL_VISION=1: a photo reaches the model as an image part, once', () => {
  let h: TelegramHarness;
  beforeAll(async () => {
    h = await TelegramHarness.start('tg-vision', { MODEL_VISION: '1' });
    h.stack.fake.setHandler(() => ({ content: 'A tiny white square.' }));
  });
  afterAll(async () => {
    await h?.close();
  });

  it('the photo is an image_url part of the request; the next turn and the stored history keep only a line', async () => {
    const chat = 2101;
    h.tg.addFile({ fileId: 'SHOT', bytes: PNG_1X1 });
    const first = h.stack.fake.requests.length;
    h.dm(chat, '', {
      text: undefined,
      caption: 'what is in this picture?',
      photo: [{ file_id: 'SHOT', file_unique_id: 's1', width: 1, height: 1, file_size: PNG_1X1.length }],
    });
    await waitFor('the answer', () => h.answers(chat).length === 1);

    const asked = h.stack.fake.requests[first]!.body.messages as ChatMessage[];
    const user = asked.find((m) => m.role === 'user')!;
    const parts = user.content as Part[];
    expect(parts.map((p) => p.type)).toEqual(['text', 'image_url']);
    expect(parts[0]!.text).toContain('what is in this picture?\n\n[Attached files, in the workspace:]\n- uploads/photo-1.jpg (70 B): image 1 below');
    // The file is named .jpg by the channel but is a PNG: the data URL says what it is.
    expect(parts[1]!.image_url!.url).toBe(`data:image/png;base64,${PNG_1X1.toString('base64')}`);

    const second = h.stack.fake.requests.length;
    h.dm(chat, 'and now?');
    await waitFor('the second answer', () => h.answers(chat).length === 2);
    const next = JSON.stringify(h.stack.fake.requests[second]!.body.messages);
    expect(next).not.toContain('base64');
    expect(next).toContain(IMAGE_NOT_KEPT);
    expect(next).toContain('what is in this picture?');

    const stored = await h.stack.redis.lrange(h.stack.keys.history(`telegram:${chat}`), 0, -1);
    expect(stored.length).toBe(2);
    expect(stored.join('')).not.toContain('base64');
  });
});
