/**
 * Payload content types and encodings, as Barbican's mime_types and translations modules treat
 * them: text/plain is stored as its UTF-8 bytes and sent without an encoding; binary types
 * arrive base64-encoded in JSON (or raw in a PUT) and are stored as bytes. A payload can be
 * fetched as text (if it is valid UTF-8) or as any binary type, whatever it was stored as.
 */
import { isUtf8 } from 'node:buffer';
import { issue } from './errors.js';

/** application/pkcs12 is an Ostia addition (Barbican stores bundles as octet-stream): clients that name it get it. */
const BINARY = ['application/octet-stream', 'application/pkcs8', 'application/pkcs12'] as const;
const PLAIN_TEXT_SPELLINGS = ['text/plain', 'text/plain;charset=utf-8', 'text/plain; charset=utf-8'];
export const SUPPORTED_SPELLINGS = [...PLAIN_TEXT_SPELLINGS, ...BINARY];

export const MAX_PAYLOAD_BYTES = 65536;

/** The stored form of a content type, or null when unsupported (a charset other than UTF-8 included). */
export function normalizeContentType(raw: string): string | null {
  const [mime = '', ...params] = raw.split(';').map((p) => p.trim().toLowerCase());
  for (const param of params) {
    const [key, value] = param.split('=').map((p) => p.trim());
    if (key !== 'charset' || value !== 'utf-8') return null;
  }
  if (mime === 'text/plain') return mime;
  return (BINARY as readonly string[]).includes(mime) && params.length === 0 ? mime : null;
}

export function isText(contentType: string): boolean {
  return contentType === 'text/plain';
}

/** Python's repr of the encodings Barbican allows for a type, as its messages print them. */
export function allowedEncodings(contentType: string): string {
  return isText(contentType) ? 'None' : "['base64', 'binary']";
}

/** Strict base64 once whitespace (line breaks of `base64` output) is removed, else null. */
export function decodeBase64(text: string): Buffer | null {
  const compact = text.replace(/\s+/g, '');
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) return null;
  return Buffer.from(compact, 'base64');
}

export interface RenderedPayload {
  body: Buffer;
  contentType: string;
}

/**
 * The payload as the Accept header asks: absent means octet-stream, `*` / `*` the stored type;
 * the first supported entry of a list wins. Text needs valid UTF-8.
 */
export function renderPayload(plain: Buffer, accept: string | undefined, storedType: string, operation: string): RenderedPayload {
  const wanted = (accept ?? '').split(',').map((a) => a.split(';q=')[0]!.trim()).filter(Boolean);
  if (!wanted.length) wanted.push('application/octet-stream');
  const type = wanted.map((w) => (w === '*/*' ? storedType : normalizeContentType(w))).find((t): t is string => t !== null);
  if (!type) throw issue(operation, 406, 'Wrong payload content-type');
  if (!isText(type)) return { body: plain, contentType: type };
  if (!isUtf8(plain)) throw issue(operation, 406, 'Wrong payload content-type');
  return { body: plain, contentType: 'text/plain; charset=utf-8' };
}
