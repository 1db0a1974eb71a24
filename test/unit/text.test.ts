import { describe, expect, it } from 'vitest';
import { clip, cutAt, formatBytes, formatDecimalBytes } from '../../src/lib/text.js';

const HIGH = /[\uD800-\uDBFF]$/;

describe('cutAt', () => {
  it('is never cut inside a surrogate pair', () => {
    expect(cutAt(`${'a'.repeat(9)}😀b`, 10)).toBe('a'.repeat(9));
    expect(cutAt(`${'a'.repeat(8)}😀b`, 10)).toBe(`${'a'.repeat(8)}😀`);
    expect(cutAt('😀😀😀', 3)).toBe('😀');
    for (let max = 0; max <= 6; max++) expect(cutAt('😀😀😀', max)).not.toMatch(HIGH);
  });

  it('keeps a text of exactly `max` whole, and cuts an empty text or a zero length to nothing', () => {
    expect(cutAt('abc😀', 5)).toBe('abc😀');
    expect(cutAt('abc', 10)).toBe('abc');
    expect(cutAt('', 5)).toBe('');
    expect(cutAt('abc', 0)).toBe('');
    expect(cutAt('abc', -1)).toBe('');
  });
});

describe('clip', () => {
  it('keeps a text of at most `max` whole; a longer one is `max` characters, the marker included', () => {
    expect(clip('abcde', 5)).toBe('abcde');
    expect(clip('abcdef', 5)).toBe('abcd…');
    expect(clip('', 5)).toBe('');
    expect(clip('a'.repeat(20), 12, ' […]')).toBe(`${'a'.repeat(8)} […]`);
    expect(clip('a'.repeat(12), 12, ' […]')).toBe('a'.repeat(12));
  });

  it('is never cut inside a surrogate pair', () => {
    expect(clip(`abc😀def`, 5)).toBe('abc…');
    expect(clip(`ab😀def`, 5)).toBe('ab😀…');
    expect(clip('😀😀😀', 4, ' […]')).toBe(' […]');
  });

  it('is only the marker when there is no room for more', () => {
    expect(clip('abc', 0)).toBe('…');
    expect(clip('abc', 1)).toBe('…');
  });
});

describe('formatBytes (binary units, the product default)', () => {
  it('writes bytes, KB and MB with one decimal, dropped when zero', () => {
    expect(formatBytes(0)).toBe('0 B');
    expect(formatBytes(1023)).toBe('1023 B');
    expect(formatBytes(1024)).toBe('1 KB');
    expect(formatBytes(1536)).toBe('1.5 KB');
    expect(formatBytes(30 * 1024)).toBe('30 KB');
    expect(formatBytes(1024 * 1024)).toBe('1 MB');
    expect(formatBytes(5.7 * 1024 * 1024)).toBe('5.7 MB');
  });
});

describe('formatDecimalBytes (limits set in decimal units)', () => {
  it('writes a decimal limit as it was set', () => {
    expect(formatDecimalBytes(5)).toBe('5 B');
    expect(formatDecimalBytes(999)).toBe('999 B');
    expect(formatDecimalBytes(3_000)).toBe('3 kB');
    expect(formatDecimalBytes(3_600)).toBe('3.6 kB');
    expect(formatDecimalBytes(20_000_000)).toBe('20 MB');
    expect(formatDecimalBytes(31_200_000)).toBe('31.2 MB');
  });
});
