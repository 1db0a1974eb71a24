import { formatBytes } from '../lib/text.js';

/** A command's output shown to the model at most: its head and its tail, half each. */
export const OUTPUT_CAP_BYTES = 30_000;

/**
 * Collects a command's output in arrival order with bounded memory: the first half of the cap
 * and the latest half, however much the command prints.
 */
export class OutputCap {
  readonly #half: number;
  #head = Buffer.alloc(0);
  #tail: Buffer[] = [];
  #tailBytes = 0;
  #total = 0;

  constructor(maxBytes = OUTPUT_CAP_BYTES) {
    this.#half = Math.floor(maxBytes / 2);
  }

  push(chunk: Buffer): void {
    this.#total += chunk.length;
    const room = this.#half - this.#head.length;
    if (room > 0) {
      this.#head = Buffer.concat([this.#head, chunk.subarray(0, room)]);
      chunk = chunk.subarray(room);
    }
    if (chunk.length === 0) return;
    this.#tail.push(chunk);
    this.#tailBytes += chunk.length;
    while (this.#tailBytes - this.#tail[0]!.length >= this.#half) this.#tailBytes -= this.#tail.shift()!.length;
  }

  /** The output as text for the model: whole, or head and tail around a note of what was cut, or a note that it is binary. */
  text(): string {
    const tailAll = Buffer.concat(this.#tail);
    let tail = tailAll.subarray(Math.max(0, tailAll.length - this.#half));
    if (mostlyBinary(Buffer.concat([this.#head, tail]))) return `[binary output, ${formatBytes(this.#total)}, not shown]`;
    if (this.#head.length + tail.length === this.#total) return Buffer.concat([this.#head, tail]).toString('utf8');
    // Cut on character boundaries, so the note is not framed by broken characters.
    const head = new TextDecoder().decode(this.#head, { stream: true });
    let start = 0;
    while (start < 3 && start < tail.length && (tail[start]! & 0xc0) === 0x80) start++;
    tail = tail.subarray(start);
    const cut = this.#total - Buffer.byteLength(head) - tail.length;
    const note = `[… ${cut.toLocaleString('en-US')} bytes of ${formatBytes(this.#total)} cut from the middle …]`;
    return `${head}\n${note}\n${tail.toString('utf8')}`;
  }
}

/** NUL bytes, or mostly bytes that are not UTF-8 (more than one character in ten). */
function mostlyBinary(bytes: Buffer): boolean {
  if (bytes.includes(0)) return true;
  const text = bytes.toString('utf8');
  let invalid = 0;
  for (const ch of text) if (ch === '\uFFFD') invalid++;
  return invalid * 10 > text.length;
}
