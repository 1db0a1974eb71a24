import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { RE2JS } from 're2js';
import { z } from 'zod';
import { clip } from '../../lib/text.js';

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

/**
 * The regex engine of every `pattern` (and `patternProperties`) in a server's schema: RE2 (re2js,
 * pure JS), which matches in time linear in the input. JavaScript's own engine backtracks: a
 * server's `^(a+)+$` against the model's "aaa…a!" would take exponential time on the worker's
 * main thread. Throws for a pattern RE2 cannot compile (backreferences, lookaround).
 */
export function linearRegExp(pattern: string, flags: string): { test(s: string): boolean; toString(): string } {
  const re = compileLinear(pattern);
  // ajv keys its compiled patterns by toString(): one per pattern and flags.
  return { test: (s: string) => re.test(s), toString: () => `/${pattern}/${flags}` };
}
// Only used when ajv prints standalone code, which this project never does.
linearRegExp.code = 'linearRegExp';

function compileLinear(pattern: string): RE2JS {
  return RE2JS.compile(RE2JS.translateRegExp(pattern));
}

/** Why RE2 cannot compile `pattern`, or undefined when it can. */
function unsupported(pattern: string): string | undefined {
  try {
    compileLinear(pattern);
    return undefined;
  } catch (err) {
    return clip((err as Error).message, 200);
  }
}

const OPTIONS: Options = {
  // Servers' schemas carry keywords and formats of their own; check what ajv knows, ignore the rest.
  strict: false,
  allErrors: true,
  validateSchema: false,
  validateFormats: true,
  code: { regExp: linearRegExp },
};

/** A `pattern` left out of a schema because RE2 cannot compile it: where (a JSON Pointer into the schema), what and why. */
export interface DroppedPattern {
  readonly at: string;
  readonly pattern: string;
  readonly reason: string;
}

/**
 * Compiles MCP tools' input schemas. One compiler per tool list: ajv keeps every schema it
 * compiled, so a refreshed list gets a new compiler and the old one goes with the old list.
 */
export class SchemaCompiler {
  readonly #instances = new Map<string, AnyAjv>();

  /**
   * A zod schema that accepts exactly what `inputSchema` accepts, with one issue per ajv error at
   * its path, so runToolCall names each bad field. A schema ajv cannot compile validates nothing
   * (the server still checks its own input) and `problem` says why. A `pattern` keyword RE2
   * cannot compile is left out (the rest of the schema still holds) and named in `dropped`.
   */
  compile(inputSchema: Record<string, unknown>): { schema: z.ZodType; problem?: string; dropped?: DroppedPattern[] } {
    let validate: ValidateFunction;
    const dropped: DroppedPattern[] = [];
    try {
      // A top-level $id would clash with the same tool's schema in the next list.
      const { $id: _id, ...rest } = inputSchema;
      validate = this.#ajvFor(inputSchema.$schema).compile(withoutUnsupportedPatterns(rest, '', dropped) as Record<string, unknown>);
    } catch (err) {
      return { schema: z.unknown(), problem: clip((err as Error).message, 200) };
    }
    const schema = z.unknown().superRefine((value, ctx) => {
      if (validate(value)) return;
      const seen = new Set<string>();
      for (const error of validate.errors ?? []) {
        const issue = toIssue(error);
        const key = `${issue.path.join('.')}\u0000${issue.message}`;
        if (seen.has(key)) continue;
        seen.add(key);
        ctx.addIssue({ code: 'custom', path: issue.path, message: issue.message });
      }
    });
    return dropped.length === 0 ? { schema } : { schema, dropped };
  }

  #ajvFor($schema: unknown): AnyAjv {
    const draft =
      typeof $schema === 'string' && $schema.includes('2020-12') ? '2020' : typeof $schema === 'string' && $schema.includes('2019-09') ? '2019' : '7';
    let ajv = this.#instances.get(draft);
    if (!ajv) {
      ajv = draft === '2020' ? new Ajv2020(OPTIONS) : draft === '2019' ? new Ajv2019(OPTIONS) : new Ajv(OPTIONS);
      addFormats.default(ajv as Ajv);
      this.#instances.set(draft, ajv);
    }
    return ajv;
  }
}

/** Keywords whose value is one subschema, an array of them, or an object of them (JSON Schema drafts 4 to 2020-12). */
const ONE_SCHEMA = [
  'additionalItems',
  'additionalProperties',
  'contains',
  'not',
  'if',
  'then',
  'else',
  'propertyNames',
  'unevaluatedItems',
  'unevaluatedProperties',
  'contentSchema',
  'items',
];
const SCHEMA_ARRAYS = ['items', 'prefixItems', 'allOf', 'anyOf', 'oneOf'];
const SCHEMA_MAPS = ['properties', 'patternProperties', 'definitions', '$defs', 'dependentSchemas', 'dependencies'];

/**
 * `schema` without the `pattern` keywords RE2 cannot compile, each recorded in `dropped` (the
 * input is not changed). Walks the subschema keywords; a pattern anywhere else (a `$ref` into a
 * place no keyword names, a `patternProperties` key) reaches ajv, fails there, and the schema
 * validates nothing, as any schema ajv cannot compile.
 */
function withoutUnsupportedPatterns(schema: unknown, at: string, dropped: DroppedPattern[]): unknown {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return schema;
  const out: Record<string, unknown> = { ...(schema as Record<string, unknown>) };
  if (typeof out.pattern === 'string') {
    const reason = unsupported(out.pattern);
    if (reason !== undefined) {
      dropped.push({ at: at === '' ? '/' : at, pattern: out.pattern, reason });
      delete out.pattern;
    }
  }
  for (const keyword of ONE_SCHEMA) {
    if (keyword in out && !Array.isArray(out[keyword])) out[keyword] = withoutUnsupportedPatterns(out[keyword], at + pointer(keyword), dropped);
  }
  for (const keyword of SCHEMA_ARRAYS) {
    const value = out[keyword];
    if (Array.isArray(value)) out[keyword] = value.map((s, i) => withoutUnsupportedPatterns(s, `${at}${pointer(keyword)}/${i}`, dropped));
  }
  for (const keyword of SCHEMA_MAPS) {
    const value = out[keyword];
    if (typeof value !== 'object' || value === null || Array.isArray(value)) continue;
    out[keyword] = Object.fromEntries(
      Object.entries(value).map(([name, s]) => [name, withoutUnsupportedPatterns(s, at + pointer(keyword) + pointer(name), dropped)]),
    );
  }
  return out;
}

/** One JSON Pointer segment: "~" is "~0", "/" is "~1". */
function pointer(key: string): string {
  return `/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`;
}

/** An ajv error as a field path and a message that reads after it ("count: must be >= 1"). */
export function toIssue(error: ErrorObject): { path: (string | number)[]; message: string } {
  const path = error.instancePath === '' ? [] : error.instancePath.slice(1).split('/').map(decodePointer);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required':
      return { path: [...path, String(params.missingProperty)], message: 'is required' };
    case 'additionalProperties':
      return { path: [...path, String(params.additionalProperty)], message: 'is not a field of this tool' };
    case 'enum':
      return { path, message: clip(`must be one of ${(params.allowedValues as unknown[]).map((v) => JSON.stringify(v)).join(', ')}`, 200) };
    case 'const':
      return { path, message: clip(`must be ${JSON.stringify(params.allowedValue)}`, 200) };
    default:
      return { path, message: error.message ?? `fails ${error.keyword}` };
  }
}

/** A JSON Pointer segment: "~1" is "/", "~0" is "~"; array indexes become numbers. */
function decodePointer(segment: string): string | number {
  const s = segment.replace(/~1/g, '/').replace(/~0/g, '~');
  return /^(0|[1-9]\d*)$/.test(s) ? Number(s) : s;
}
