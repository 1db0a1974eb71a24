import type { z } from 'zod';

/**
 * Why a platform payload cannot be read, one line naming the fields (never their values: they may
 * be someone's text); undefined when it can. Each channel checks what it reads at its edge.
 */
export function malformed(schema: z.ZodType, payload: unknown): string | undefined {
  const parsed = schema.safeParse(payload);
  if (parsed.success) return undefined;
  return parsed.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.') || '(payload)'}: ${i.message}`)
    .join('; ');
}
