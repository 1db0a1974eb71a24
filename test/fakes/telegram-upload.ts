/**
 * What the fake Bot API needs to take uploads as Telegram does: a multipart/form-data reader that
 * accepts grammY's wire format, and the image facts sendPhoto checks.
 *
 * grammY writes its part headers without spaces and the file name unquoted
 * (`content-disposition:form-data;name="x1";filename=report.pdf`) and sends the file under a
 * random part name that the method's field points to (`document=attach://x1`). Telegram takes
 * that; Node's own `Response.formData()` rejects it, hence this small reader.
 */

export interface UploadedFile {
  /** The file name the client sent. */
  name: string;
  /** The part's content type (grammY always sends application/octet-stream). */
  type: string;
  bytes: Uint8Array;
}

interface MultipartForm {
  fields: Map<string, string>;
  files: Map<string, UploadedFile>;
}

const CRLF = Buffer.from('\r\n');

export function parseMultipart(body: Buffer, contentType: string): MultipartForm | { error: string } {
  const boundary = /boundary=(?:"([^"]+)"|([^;\s]+))/i.exec(contentType);
  if (!boundary) return { error: 'multipart boundary not found' };
  const delimiter = Buffer.from(`--${boundary[1] ?? boundary[2]}`);
  const form: MultipartForm = { fields: new Map(), files: new Map() };
  let pos = body.indexOf(delimiter);
  if (pos < 0) return { error: 'malformed multipart body' };
  for (;;) {
    pos += delimiter.length;
    if (body.subarray(pos, pos + 2).toString() === '--') return form;
    if (body.subarray(pos, pos + 2).equals(CRLF)) pos += 2;
    const headerEnd = body.indexOf('\r\n\r\n', pos);
    const next = headerEnd < 0 ? -1 : body.indexOf(Buffer.concat([CRLF, delimiter]), headerEnd + 4);
    if (headerEnd < 0 || next < 0) return { error: 'malformed multipart body' };
    const headers = partHeaders(body.subarray(pos, headerEnd).toString('utf8'));
    const disposition = headers.get('content-disposition') ?? '';
    const name = param(disposition, 'name');
    if (name === undefined) return { error: 'a multipart part has no name' };
    const content = body.subarray(headerEnd + 4, next);
    const filename = param(disposition, 'filename');
    if (filename !== undefined)
      form.files.set(name, { name: filename, type: headers.get('content-type') ?? 'application/octet-stream', bytes: new Uint8Array(content) });
    else form.fields.set(name, content.toString('utf8'));
    pos = next + CRLF.length;
  }
}

/** Fields whose values are JSON-serialized objects (as every client sends them in a form). */
const JSON_FIELDS = new Set(['reply_parameters', 'reply_markup', 'caption_entities', 'link_preview_options']);
const NUMBER_FIELDS = new Set(['chat_id', 'message_thread_id']);
const BOOLEAN_FIELDS = new Set(['disable_notification', 'protect_content', 'has_spoiler', 'show_caption_above_media', 'disable_content_type_detection']);

/**
 * The form as the JSON body of the same call would be: a field that says `attach://<part>`, or a
 * file part named after the field itself, becomes the UploadedFile.
 */
export function formToBody(form: MultipartForm): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  for (const [key, value] of form.fields) {
    const attached = value.startsWith('attach://') ? form.files.get(value.slice('attach://'.length)) : undefined;
    if (attached) body[key] = attached;
    else if (JSON_FIELDS.has(key)) body[key] = JSON.parse(value);
    else if (NUMBER_FIELDS.has(key) && /^-?\d+$/.test(value)) body[key] = Number(value);
    else if (BOOLEAN_FIELDS.has(key)) body[key] = value === 'true';
    else body[key] = value;
  }
  for (const [key, file] of form.files) if (!(key in body) && ![...form.fields.values()].includes(`attach://${key}`)) body[key] = file;
  return body;
}

export function isUploadedFile(value: unknown): value is UploadedFile {
  return typeof value === 'object' && value !== null && 'bytes' in value && (value as UploadedFile).bytes instanceof Uint8Array;
}

function partHeaders(text: string): Map<string, string> {
  const headers = new Map<string, string>();
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim());
  }
  return headers;
}

/** A Content-Disposition parameter, quoted or not (`name` never matches inside `filename`). */
function param(disposition: string, key: string): string | undefined {
  const m = new RegExp(`(?:^|;)\\s*${key}=(?:"((?:[^"\\\\]|\\\\.)*)"|([^;]*))`, 'i').exec(disposition);
  if (!m) return undefined;
  return m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : m[2]!.trim();
}

/** Width and height from a PNG, JPEG or WebP header; undefined when the bytes are not one of them (Telegram: IMAGE_PROCESS_FAILED). */
export function imageSize(bytes: Uint8Array): { width: number; height: number } | undefined {
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (b.length >= 24 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])))
    return { width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) return jpegSize(b);
  if (b.length >= 30 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return webpSize(b);
  return undefined;
}

function jpegSize(b: Buffer): { width: number; height: number } | undefined {
  for (let i = 2; i + 9 < b.length; ) {
    if (b[i] !== 0xff) return undefined;
    const marker = b[i + 1]!;
    // SOF0..SOF15 carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not.
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc)
      return { height: b.readUInt16BE(i + 5), width: b.readUInt16BE(i + 7) };
    i += 2 + b.readUInt16BE(i + 2);
  }
  return undefined;
}

function webpSize(b: Buffer): { width: number; height: number } | undefined {
  const chunk = b.toString('latin1', 12, 16);
  if (chunk === 'VP8X') return { width: 1 + b.readUIntLE(24, 3), height: 1 + b.readUIntLE(27, 3) };
  if (chunk === 'VP8 ') return { width: b.readUInt16LE(26) & 0x3fff, height: b.readUInt16LE(28) & 0x3fff };
  if (chunk === 'VP8L') {
    const bits = b.readUInt32LE(21);
    return { width: 1 + (bits & 0x3fff), height: 1 + ((bits >> 14) & 0x3fff) };
  }
  return undefined;
}

/** sendPhoto's documented bounds: "width and height must not exceed 10000 in total. Width and height ratio must be at most 20." */
export function photoDimensionsValid({ width, height }: { width: number; height: number }): boolean {
  return width > 0 && height > 0 && width + height <= 10_000 && Math.max(width, height) / Math.min(width, height) <= 20;
}

/** The sizes Telegram keeps of a photo: thumbnails of the standard sides below the original, then the original (at most 2560 on its longer side). */
export function photoSizes(fileId: string, size: { width: number; height: number }, fileSize: number) {
  const longest = Math.max(size.width, size.height);
  const sides = [90, 320, 800, 1280].filter((side) => side < longest);
  sides.push(Math.min(longest, 2560));
  return sides.map((side, i) => {
    const scale = side / longest;
    const last = i === sides.length - 1;
    return {
      file_id: `${fileId}-${i}`,
      file_unique_id: `u-${fileId}-${i}`,
      width: Math.max(1, Math.round(size.width * scale)),
      height: Math.max(1, Math.round(size.height * scale)),
      file_size: last ? fileSize : Math.max(1, Math.round(fileSize * scale * scale)),
    };
  });
}
