/** What every route of the key manager's HTTP API shares: its dependencies, caller, loaders, paging. */
import type { FastifyRequest } from 'fastify';
import type { RequestContext } from '../domain/context.js';
import { isUuid, refBase, type EntityKind, type Guarded, type Identity } from './access.js';
import type { PayloadCipher } from './crypto.js';
import { BarbicanError, unsupportedContentType } from './errors.js';
import type { ContainerRow, KeyManagerStore, SecretRow } from './store.js';

export interface KeyManagerDeps {
  readonly store: KeyManagerStore;
  readonly cipher: PayloadCipher;
  /** The base URL clients reach Ostia at; references are built from it. */
  publicUrl(): string;
}

export function base(deps: KeyManagerDeps): string {
  return refBase(deps.publicUrl());
}

/** Under noauth every caller is an admin (Octavia's rule), so of its stated project too. */
export function identityOf(req: FastifyRequest): Identity {
  const ctx: RequestContext = req.ctx;
  return { projectId: ctx.projectId, userId: ctx.userId, roles: ctx.isAdmin ? [...ctx.roles, 'admin', 'member'] : ctx.roles };
}

export const LABEL: Readonly<Record<EntityKind, string>> = { secret: 'Secret', container: 'Container' };

const NOT_FOUND: Readonly<Record<EntityKind, string>> = { secret: 'Secret not found.', container: 'Secrets container not found.' };

export type EntityRow<K extends EntityKind> = K extends 'secret' ? SecretRow : ContainerRow;

/** 404 for an id that is not a uuid and for one that does not exist, in Barbican's words. */
export async function load<K extends EntityKind>(deps: KeyManagerDeps, kind: K, id: string): Promise<{ row: EntityRow<K>; guard: Guarded }> {
  if (!isUuid(id)) throw new BarbicanError(404, `Not Found. Provided ${kind} id is invalid.`);
  const row = (kind === 'secret' ? await deps.store.secret(id) : await deps.store.container(id)) as EntityRow<K> | undefined;
  if (!row) throw new BarbicanError(404, NOT_FOUND[kind]);
  return { row, guard: await deps.store.guard(kind, row) };
}

/** The media type of the request without parameters, lower-cased. */
export function mediaType(req: FastifyRequest): string {
  return (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
}

export function requireJson(req: FastifyRequest): void {
  if (mediaType(req) !== 'application/json') throw unsupportedContentType(['application/json']);
}

/** The first value of a query parameter. */
export function param(req: FastifyRequest, name: string): string | undefined {
  const v = (req.query as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(v) ? v[0] : v;
}

const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 100;

/** Barbican's clean_paging_values: junk falls back to the defaults, limits are clamped. */
export function paging(req: FastifyRequest): { offset: number; limit: number } {
  const int = (v: string | undefined) => (v && /^-?\d+$/.test(v) ? Number(v) : null);
  const offset = int(param(req, 'offset'));
  const limit = int(param(req, 'limit'));
  return {
    offset: offset === null || offset < 0 ? 0 : offset,
    limit: !limit ? DEFAULT_LIMIT : Math.min(Math.max(limit, 1), MAX_LIMIT),
  };
}

/** The query string minus paging, for `next` / `previous` links. */
export function otherParams(req: FastifyRequest): string {
  const params = new URL(req.url, 'http://x').searchParams;
  params.delete('limit');
  params.delete('offset');
  return params.toString();
}

export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
