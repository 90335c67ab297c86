/**
 * The page's one HTTP client: every call goes to the public Octavia, Barbican or Keystone API with
 * the session's token, and every failure becomes an ApiError carrying the API's own words
 * (Octavia's `faultstring`, Keystone's and Barbican's `message`/`description`) and, where the
 * message names one, the field it is about, so a form can show it beside that field.
 */
import { session, expire } from './session.js';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    /** The request field the API's message names, if any (`protocol_port`, `vip_subnet_id`…). */
    readonly field: string | null,
  ) {
    super(message);
  }
}

const FIELD_PATTERNS = [/Invalid input for field\/attribute ([\w.]+)\./, /Unknown attributes? for argument \w+: ([\w.]+)/, /^(\w+) is not a valid option for/, /'(\w+)' is a required property/];

/** The field an API message is about: the last segment of a dotted path, as the forms name fields. */
export function fieldOf(message: string): string | null {
  for (const p of FIELD_PATTERNS) {
    const m = p.exec(message);
    if (m) return m[1]!.split('.').pop()!;
  }
  return null;
}

function messageOf(status: number, body: unknown, fallback: string): string {
  if (body && typeof body === 'object') {
    const b = body as Record<string, unknown>;
    if (typeof b.faultstring === 'string') return b.faultstring;
    const err = b.error as Record<string, unknown> | undefined;
    if (err && typeof err.message === 'string') return err.message;
    if (typeof b.description === 'string') return b.description;
    if (typeof b.title === 'string') return b.title;
  }
  return fallback || `HTTP ${status}`;
}

export interface CallOptions {
  body?: unknown;
  /** A token other than the session's (login, project switch). */
  token?: string | null;
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

/** The response itself, for callers that need its headers (Keystone's X-Subject-Token). */
export async function send(method: string, url: string, opts: CallOptions = {}): Promise<Response> {
  const token = opts.token === undefined ? session.value?.token ?? null : opts.token;
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  if (token) headers['x-auth-token'] = token;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body: opts.body === undefined ? null : JSON.stringify(opts.body), signal: opts.signal ?? null });
  } catch (e) {
    if ((e as Error).name === 'AbortError') throw e;
    throw new ApiError(0, `the API at ${new URL(url, location.href).origin} did not answer (${(e as Error).message}); check that the service runs`, null);
  }
  if (res.ok) return res;
  const text = await res.text();
  let body: unknown = null;
  try {
    body = JSON.parse(text);
  } catch {
    body = null;
  }
  const message = messageOf(res.status, body, text.slice(0, 300));
  // A token that expired (or was revoked) mid-session: back to the login form, saying why.
  if (res.status === 401 && token && token === session.value?.token) expire(message);
  throw new ApiError(res.status, message, fieldOf(message));
}

export async function call<T>(method: string, url: string, opts: CallOptions = {}): Promise<T> {
  const res = await send(method, url, opts);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export const get = <T>(url: string, signal?: AbortSignal) => call<T>('GET', url, signal ? { signal } : {});

/** Octavia's v2 API on this origin. */
export const lbaas = (path: string) => `/v2/lbaas/${path}`;
export const octavia = (path: string) => `/v2/octavia/${path}`;
export const ostia = (path: string) => `/v2/ostia/${path}`;

/** A whole collection, following Octavia's `next` links (the API pages at its pagination limit). */
export async function getAll<T>(url: string, root: string, signal?: AbortSignal): Promise<T[]> {
  const out: T[] = [];
  let next: string | null = url;
  while (next) {
    const page: Record<string, unknown> = await get<Record<string, unknown>>(next, signal);
    out.push(...((page[root] as T[]) ?? []));
    const links = (page[`${root}_links`] as Array<{ rel: string; href: string }> | undefined) ?? [];
    const href = links.find((l) => l.rel === 'next')?.href;
    // The link names the API's public URL; the page follows it on its own origin.
    const link = href ? new URL(href, location.href) : null;
    next = link ? link.pathname + link.search : null;
  }
  return out;
}
