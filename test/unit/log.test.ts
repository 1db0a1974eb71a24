import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from '../../src/log.js';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      lines.push(JSON.parse(chunk.toString()));
      done();
    },
  });
  return { lines, stream };
}

describe('logger', () => {
  it('writes one JSON line per event and redacts tokens, keys and auth headers', () => {
    const { lines, stream } = capture();
    const log = createLogger('info', 'switchboard', stream).child({ session: 'telegram:1', runId: '7.1' });
    log.info(
      { token: 'bot-secret', config: { botToken: 'xoxb-1', signingSecret: 's3', apiKey: 'sk-1' }, req: { headers: { authorization: 'Bearer abc' } } },
      'run started',
    );
    expect(lines).toHaveLength(1);
    const line = lines[0]!;
    expect(line).toMatchObject({ msg: 'run started', session: 'telegram:1', runId: '7.1', token: '[redacted]' });
    expect(line.config).toEqual({ botToken: '[redacted]', signingSecret: '[redacted]', apiKey: '[redacted]' });
    expect(JSON.stringify(line)).not.toMatch(/bot-secret|xoxb-1|s3|sk-1|Bearer abc/);
  });

  it('drops debug lines (where message text goes) at info level', () => {
    const { lines, stream } = capture();
    const log = createLogger('info', 'switchboard', stream);
    log.debug({ text: 'the user said something private' }, 'inbound text');
    log.info('kept');
    expect(lines.map((l) => l.msg)).toEqual(['kept']);
  });
});
