/**
 * Reads an HTTP response body into memory, refusing it as soon as it passes `maxBytes`: by its
 * declared length before reading, else while streaming (the rest is never downloaded).
 * Attachments from every platform go through here.
 */
export async function readCapped(res: Response, maxBytes: number, tooLarge: () => Error): Promise<Uint8Array> {
  if (!res.body) return new Uint8Array(0);
  if (Number(res.headers.get('content-length') ?? NaN) > maxBytes) {
    await res.body.cancel().catch(() => undefined);
    throw tooLarge();
  }
  const chunks: Uint8Array[] = [];
  let total = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw tooLarge();
    }
    chunks.push(value);
  }
  const bytes = new Uint8Array(total);
  let at = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, at);
    at += chunk.byteLength;
  }
  return bytes;
}
