import { randomInt } from 'node:crypto';

/** Without the look-alikes 0/O and 1/I/L, so a code read aloud or retyped survives. */
export const CODE_ALPHABET = 'ABCDEFGHJKMNPQRSTUVWXYZ23456789';
export const CODE_LENGTH = 8;

export function newPairingCode(): string {
  let code = '';
  for (let i = 0; i < CODE_LENGTH; i++) code += CODE_ALPHABET[randomInt(CODE_ALPHABET.length)];
  return code;
}

/** What an operator typed (any case, spaces or dashes) as a code, or undefined when it cannot be one. */
export function normaliseCode(typed: string): string | undefined {
  const code = typed.toUpperCase().replace(/[\s-]/g, '');
  if (code.length !== CODE_LENGTH) return undefined;
  return [...code].every((c) => CODE_ALPHABET.includes(c)) ? code : undefined;
}
