import { describe, expect, it } from 'vitest';
import { COMMANDS, helpText, parseCommand, unknownCommandText } from '../../src/channels/commands.js';

describe('parseCommand', () => {
  it.each([
    ['/stop', { name: 'stop', args: '' }],
    ['/STATUS', { name: 'status', args: '' }],
    ['/Reset', { name: 'reset', args: '' }],
    ['/help', { name: 'help', args: '' }],
    ['  /stop  ', { name: 'stop', args: '' }],
    ['/reset now please', { name: 'reset', args: 'now please' }],
    ['/help   spaced   args  ', { name: 'help', args: 'spaced   args' }],
  ])('%j → %j', (text, expected) => {
    expect(parseCommand(text)).toEqual(expected);
  });

  it('accepts a command addressed to this bot, in any case', () => {
    expect(parseCommand('/stop@mybot', 'mybot')).toEqual({ name: 'stop', args: '' });
    expect(parseCommand('/status@MyBot', 'mybot')).toEqual({ name: 'status', args: '' });
    expect(parseCommand('/ask@mybot text', 'mybot')).toEqual({ unknown: 'ask' });
    expect(parseCommand('/reset@mybot keep the files', 'mybot')).toEqual({ name: 'reset', args: 'keep the files' });
  });

  it('ignores a command addressed to another bot', () => {
    expect(parseCommand('/ask@mybot text', 'otherbot')).toBeNull();
    expect(parseCommand('/stop@otherbot', 'mybot')).toBeNull();
    expect(parseCommand('/status@mybot_two', 'mybot')).toBeNull();
  });

  it('without a bot name, an addressed command is accepted', () => {
    expect(parseCommand('/stop@anybot')).toEqual({ name: 'stop', args: '' });
  });

  it('an unknown command is reported by its lower-cased name', () => {
    expect(parseCommand('/frobnicate')).toEqual({ unknown: 'frobnicate' });
    expect(parseCommand('/unschedule k3f9qz')).toEqual({ name: 'unschedule', args: 'k3f9qz' });
    expect(parseCommand('/schedules@mybot', 'mybot')).toEqual({ name: 'schedules', args: '' });
    expect(parseCommand('/Deploy now')).toEqual({ unknown: 'deploy' });
    expect(parseCommand('/start-over')).toEqual({ unknown: 'start-over' });
  });

  it.each(['hello', 'please /stop', '', '   ', '/', '/ stop', '/123', '/path/to/file.txt', 'stop', '//stop'])('plain text %j is not a command', (text) => {
    expect(parseCommand(text)).toBeNull();
  });

  it('keeps multi-line arguments, newlines included', () => {
    expect(parseCommand('/reset\nline one\nline two')).toEqual({ name: 'reset', args: 'line one\nline two' });
    expect(parseCommand('/ask@mybot first line\n\nsecond paragraph\n', 'mybot')).toEqual({ unknown: 'ask' });
    expect(parseCommand('/help first\n  second  ')).toEqual({ name: 'help', args: 'first\n  second' });
  });
});

describe('help and unknown-command texts', () => {
  it('helpText names every command with its description', () => {
    const text = helpText();
    expect(Object.keys(COMMANDS).sort()).toEqual(['agent', 'forget', 'help', 'memory', 'reset', 'schedules', 'status', 'stop', 'unschedule']);
    for (const [name, what] of Object.entries(COMMANDS)) expect(text).toContain(`/${name} — ${what}`);
    expect(text.split('\n')).toHaveLength(2 + Object.keys(COMMANDS).length);
    expect(text.startsWith('I am Switchboard')).toBe(true);
  });

  it('unknownCommandText names the command and lists the real ones', () => {
    expect(unknownCommandText('frobnicate')).toBe(
      'Unknown command /frobnicate. Commands: /help, /reset, /stop, /status, /agent, /memory, /forget, /schedules, /unschedule.',
    );
  });
});
