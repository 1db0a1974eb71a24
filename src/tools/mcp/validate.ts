import { Ajv, type ErrorObject, type Options, type ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import { clip } from '../text.js';

type AnyAjv = Ajv | Ajv2019 | Ajv2020;

const OPTIONS: Options = {
  // Servers' schemas carry keywords and formats of their own; check what ajv knows, ignore the rest.
  strict: false,
  allErrors: true,
  validateSchema: false,
  validateFormats: true,
};

/**
 * Compiles MCP tools' input schemas. One compiler per tool list: ajv keeps every schema it
 * compiled, so a refreshed list gets a new compiler and the old one goes with the old list.
 */
export class SchemaCompiler {
  readonly #instances = new Map<string, AnyAjv>();

  /**
   * A zod schema that accepts exactly what `inputSchema` accepts, with one issue per ajv error at
   * its path, so runToolCall names each bad field. A schema ajv cannot compile validates nothing
   * (the server still checks its own input) and `problem` says why.
   */
  compile(inputSchema: Record<string, unknown>): { schema: z.ZodType; problem?: string } {
    let validate: ValidateFunction;
    try {
      // A top-level $id would clash with the same tool's schema in the next list.
      const { $id: _id, ...rest } = inputSchema;
      validate = this.#ajvFor(inputSchema.$schema).compile(rest);
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
    return { schema };
  }

  #ajvFor($schema: unknown): AnyAjv {
    const draft = typeof $schema === 'string' && $schema.includes('2020-12') ? '2020' : typeof $schema === 'string' && $schema.includes('2019-09') ? '2019' : '7';
    let ajv = this.#instances.get(draft);
    if (!ajv) {
      ajv = draft === '2020' ? new Ajv2020(OPTIONS) : draft === '2019' ? new Ajv2019(OPTIONS) : new Ajv(OPTIONS);
      addFormats.default(ajv as Ajv);
      this.#instances.set(draft, ajv);
    }
    return ajv;
  }
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
