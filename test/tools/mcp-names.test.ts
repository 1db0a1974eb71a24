import { describe, expect, it } from 'vitest';
import { MAX_TOOL_NAME, mcpToolNames, sanitiseNamePart } from '../../src/tools/mcp/names.js';

const OPENAI_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
const names = (...refs: [string, string][]) => mcpToolNames(refs.map(([server, tool]) => ({ server, tool })));

describe('mcpToolNames', () => {
  it('is <server>__<tool>, sanitised to OpenAI’s rule', () => {
    expect(names(['github', 'create_issue'], ['my.server', 'files/read v2'], ['ü-srv', 'ok-1'])).toEqual([
      'github__create_issue',
      'my_server__files_read_v2',
      '_-srv__ok-1',
    ]);
    expect(sanitiseNamePart('a.b c/d:é')).toBe('a_b_c_d__');
  });

  it('shortens a name over 64 characters, keeping __, a readable start and a hash suffix', () => {
    const tool = 'summarise_the_quarterly_revenue_figures_for_every_region_and_product_line';
    const [name] = names(['fake', tool]);
    expect(name).toMatch(OPENAI_NAME);
    expect(name).toHaveLength(MAX_TOOL_NAME);
    expect(name).toMatch(/^fake__summarise_the_quarterly_revenue_figures_for_every_[0-9a-f]{8}$/);
    // The same tool always gets the same name, whatever else is listed.
    expect(names(['other', 'x'], ['fake', tool])[1]).toBe(name);
  });

  it('keeps at least 20 characters of a long server name, and more when the tool name is short', () => {
    const server = 'the-internal-customer-relationship-management-system-of-acme-corp';
    const [long, short] = names([server, 'find_customer_by_email_address_or_phone'], [server, 'find']);
    expect(long).toMatch(/^the-internal-custome__find_customer_by_email_address_or_[0-9a-f]{8}$/);
    expect(short).toMatch(/^the-internal-customer-relationship-management-sys__find_[0-9a-f]{8}$/);
    for (const n of [long, short]) expect(n).toHaveLength(MAX_TOOL_NAME);
  });

  it('gives different long names that share a start different suffixes', () => {
    const a = `${'x'.repeat(70)}_a`;
    const b = `${'x'.repeat(70)}_b`;
    const [na, nb] = names(['s', a], ['s', b]);
    expect(na).not.toBe(nb);
    expect(na!.slice(0, -8)).toBe(nb!.slice(0, -8));
  });

  it('resolves names that collide once sanitised by hashing each of them, deterministically', () => {
    const first = names(['a.b', 'run'], ['a_b', 'run'], ['c', 'x.y'], ['c', 'x_y'], ['c', 'plain']);
    expect(first[4]).toBe('c__plain');
    for (const n of first.slice(0, 4)) expect(n).toMatch(/^(a_b__run|c__x_y)_[0-9a-f]{8}$/);
    expect(new Set(first).size).toBe(5);
    // Order does not matter: each tool keeps its name.
    const reversed = names(['c', 'plain'], ['c', 'x_y'], ['c', 'x.y'], ['a_b', 'run'], ['a.b', 'run']);
    expect(reversed).toEqual([...first].reverse());
  });

  it('keeps server and tool apart when hashing (a__b + c differs from a + b__c)', () => {
    const [x, y] = names(['a__b', 'c'], ['a', 'b__c']);
    expect(x).not.toBe(y);
    expect(x).toMatch(/^a__b__c_[0-9a-f]{8}$/);
  });

  it('does not treat the same tool listed twice as a collision', () => {
    expect(names(['s', 't'], ['s', 't'])).toEqual(['s__t', 's__t']);
  });

  it('always produces valid, unique names', () => {
    const refs: [string, string][] = [];
    for (let i = 0; i < 200; i++) refs.push([`srv${i % 7}.${'y'.repeat(i % 50)}`, `t/${i % 13}${'z'.repeat(i)}`]);
    const out = names(...refs);
    for (const n of out) expect(n).toMatch(OPENAI_NAME);
    expect(new Set(out).size).toBe(new Set(refs.map((r) => r.join('\0'))).size);
  });
});
