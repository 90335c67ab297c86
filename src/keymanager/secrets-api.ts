/** `/v1/secrets`: store (one step, or two with a PUT of the payload), list, metadata, payload, delete. */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { preciseTimestamp, timestamp } from '../domain/time.js';
import { isAdminAnywhere, mayCreate, mayManage, mayRead } from './access.js';
import { KeyUnavailableError } from './crypto.js';
import { BarbicanError, failure, invalidObject, issue, notAllowed, pythonList, unsupportedContentType } from './errors.js';
import { base, identityOf, isObject, load, mediaType, otherParams, paging, param, requireJson, type KeyManagerDeps } from './http.js';
import { allowedEncodings, decodeBase64, isText, MAX_PAYLOAD_BYTES, normalizeContentType, renderPayload, SUPPORTED_SPELLINGS } from './payload.js';
import type { DateBound, SecretQuery, SecretRow } from './store.js';
import { pageLinks, secretRef, secretView } from './views.js';

const SECRET_TYPES = ['symmetric', 'passphrase', 'private', 'public', 'certificate', 'opaque'];
const SORT_COLUMNS = { algorithm: 'algorithm', bit_length: 'bit_length', created: 'created_at', expiration: 'expiration', mode: 'mode', name: 'name', secret_type: 'secret_type', updated: 'updated_at' } as const;
const PUT_TYPES = ['application/octet-stream', 'text/plain'];

export async function secretRoutes(app: FastifyInstance, deps: KeyManagerDeps): Promise<void> {
  app.post('/v1/secrets', async (req, reply) => {
    const op = 'Secret creation';
    const who = identityOf(req);
    if (!mayCreate(who)) throw notAllowed(op);
    requireJson(req);
    const input = newSecret(req.body);
    const id = randomUUID();
    const now = preciseTimestamp();
    const row: SecretRow = {
      id,
      project_id: who.projectId!,
      creator_id: who.userId,
      name: input.name,
      secret_type: input.secretType,
      algorithm: input.algorithm,
      bit_length: input.bitLength,
      mode: input.mode,
      expiration: input.expiration,
      content_type: input.payload ? input.payload.contentType : null,
      key_id: null,
      nonce: null,
      ciphertext: null,
      auth_tag: null,
      created_at: now,
      updated_at: now,
    };
    if (input.payload) {
      const sealed = seal(deps, input.payload.bytes, id, op);
      Object.assign(row, { key_id: sealed.keyId, nonce: sealed.nonce, ciphertext: sealed.ciphertext, auth_tag: sealed.tag });
    }
    await deps.store.insertSecret(row);
    const ref = secretRef(base(deps), id);
    return reply.code(201).header('location', ref).send({ secret_ref: ref });
  });

  app.get('/v1/secrets', async (req) => {
    const who = identityOf(req);
    if (!mayCreate(who)) throw notAllowed('Secret(s) retrieval');
    const query = secretQuery(req, who.projectId, who.userId);
    const page = await deps.store.listSecrets(query);
    const b = base(deps);
    if (!page.rows.length) return { secrets: [], total: page.total };
    return { secrets: page.rows.map((s) => secretView(b, s)), ...pageLinks(b, 'secrets', query.offset, query.limit, page.total, otherParams(req)), total: page.total };
  });

  // Barbican answers a non-JSON Accept here with the payload (its deprecated form of /payload).
  app.get<{ Params: { id: string } }>('/v1/secrets/:id', async (req, reply) => {
    const op = 'Secret retrieval';
    const who = identityOf(req);
    const { row, guard } = await load(deps, 'secret', req.params.id);
    const accept = req.headers.accept?.trim();
    if (!accept || accept === 'application/json' || accept === '*/*') {
      if (!mayRead(who, guard) && !isAdminAnywhere(who)) throw notAllowed(op);
      return secretView(base(deps), row);
    }
    if (!mayRead(who, guard)) throw notAllowed(op);
    return sendPayload(deps, row, req, reply, op);
  });

  app.get<{ Params: { id: string } }>('/v1/secrets/:id/payload', async (req, reply) => {
    const op = 'Secret payload retrieval';
    const { row, guard } = await load(deps, 'secret', req.params.id);
    if (!mayRead(identityOf(req), guard)) throw notAllowed(op);
    return sendPayload(deps, row, req, reply, op);
  });

  app.put<{ Params: { id: string } }>('/v1/secrets/:id', async (req, reply) => {
    const op = 'Secret update';
    const { row, guard } = await load(deps, 'secret', req.params.id);
    if (!mayManage(identityOf(req), guard)) throw notAllowed(op);
    const type = mediaType(req);
    if (type === '' || type === 'application/json') throw new BarbicanError(415, `Content-Type of '${type}' is not supported for PUT.`);
    if (!PUT_TYPES.includes(type)) throw unsupportedContentType(PUT_TYPES);
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    if (!raw.length) throw issue(op, 400, 'No data supplied to process');
    if (raw.length > MAX_PAYLOAD_BYTES) throw issue(op, 413, 'Provided information too large to process');
    if (row.ciphertext !== null) throw new BarbicanError(409, 'Secret already has data, cannot modify it.');
    const bytes = !isText(type) && req.headers['content-encoding']?.toLowerCase() === 'base64' ? decodeBase64(raw.toString('latin1')) : raw;
    if (!bytes) throw issue(op, 400, 'Problem decoding payload');
    if (!(await deps.store.setPayload(row.id, type, seal(deps, bytes, row.id, op)))) throw new BarbicanError(409, 'Secret already has data, cannot modify it.');
    return reply.code(204).send();
  });

  app.delete<{ Params: { id: string } }>('/v1/secrets/:id', async (req, reply) => {
    const who = identityOf(req);
    const { row, guard } = await load(deps, 'secret', req.params.id);
    if (!mayManage(who, guard) && !isAdminAnywhere(who)) throw notAllowed('Secret deletion');
    await deps.store.deleteSecret(row.id);
    return reply.code(204).send();
  });
}

function seal(deps: KeyManagerDeps, bytes: Buffer, id: string, op: string) {
  try {
    return deps.cipher.seal(bytes, id);
  } catch (e) {
    throw unavailable(e, op);
  }
}

/** A missing key is the operator's problem: logged by the error handler, never a client detail. */
function unavailable(e: unknown, op: string): unknown {
  return e instanceof KeyUnavailableError ? failure(op, e) : e;
}

function sendPayload(deps: KeyManagerDeps, row: SecretRow, req: FastifyRequest, reply: FastifyReply, op: string): FastifyReply {
  if (row.ciphertext === null || row.content_type === null) throw new BarbicanError(404, 'Not Found. Sorry but your secret has no payload.');
  let plain: Buffer;
  try {
    plain = deps.cipher.open({ keyId: row.key_id!, nonce: row.nonce!, ciphertext: row.ciphertext, tag: row.auth_tag! }, row.id);
  } catch (e) {
    throw unavailable(e, op);
  }
  const rendered = renderPayload(plain, req.headers.accept, row.content_type, op);
  return reply.type(rendered.contentType).send(rendered.body);
}

interface NewSecret {
  name: string | null;
  secretType: string;
  algorithm: string | null;
  bitLength: number | null;
  mode: string | null;
  expiration: string | null;
  payload: { bytes: Buffer; contentType: string } | null;
}

/** NewSecretValidator, check for check. */
function newSecret(body: unknown): NewSecret {
  const op = 'Secret creation';
  const bad = (reason: string, property: string) => invalidObject(op, 'Secret', reason, property);
  if (!isObject(body)) throw bad(`${JSON.stringify(body ?? null)} is not of type 'object'`, 'body');
  const text = (key: string, max: number, nullable = false): string | null => {
    const v = body[key];
    if (v === undefined || (nullable && v === null)) return null;
    if (typeof v !== 'string') throw bad(`${JSON.stringify(v)} is not of type 'string'`, key);
    if (v.length > max) throw bad(`'${v.slice(0, 32)}…' is too long`, key);
    return v;
  };
  const name = text('name', 255, true)?.trim() ?? null;
  const algorithm = text('algorithm', 255);
  const mode = text('mode', 255);
  const secretType = text('secret_type', 80) ?? 'opaque';
  if (!SECRET_TYPES.includes(secretType)) throw bad(`'${secretType}' is not one of ${pythonList(SECRET_TYPES)}`, 'secret_type');
  const bits = body.bit_length;
  if (bits !== undefined && (typeof bits !== 'number' || !Number.isInteger(bits) || bits < 1 || bits > 32767))
    throw bad(`${JSON.stringify(bits)} is not a valid bit length`, 'bit_length');
  const expiration = parseExpiration(text('expiration', 255), bad);
  const contentType = text('payload_content_type', 255, true);
  const encoding = text('payload_content_encoding', 255);
  if (encoding !== null && encoding !== 'base64') throw bad(`'${encoding}' is not one of ['base64']`, 'payload_content_encoding');
  const payload = text('payload', Number.MAX_SAFE_INTEGER);
  if (payload === null) {
    if (contentType !== null) throw bad('payload must be provided when payload_content_type is specified', 'payload');
    return { name, secretType, algorithm, bitLength: (bits as number | undefined) ?? null, mode, expiration, payload: null };
  }
  if (contentType === null) throw bad("If 'payload' is supplied, 'payload_content_type' must also be supplied.", 'payload_content_type');
  const normalized = normalizeContentType(contentType);
  if (!normalized) throw bad(`payload_content_type is not one of ${pythonList(SUPPORTED_SPELLINGS)}`, 'payload_content_type');
  if (isText(normalized) ? encoding !== null : encoding === null) throw bad(`payload_content_encoding is not one of ${allowedEncodings(normalized)}`, 'payload_content_encoding');
  const trimmed = payload.trim();
  if (!trimmed) throw bad("If 'payload' specified, must be non empty", 'payload');
  const bytes = isText(normalized) ? Buffer.from(trimmed, 'utf8') : decodeBase64(trimmed);
  if (!bytes) throw bad('Invalid payload for payload_content_encoding', 'payload');
  if (bytes.length > MAX_PAYLOAD_BYTES) throw issue(op, 413, 'Provided information too large to process');
  return { name, secretType, algorithm, bitLength: (bits as number | undefined) ?? null, mode, expiration, payload: { bytes, contentType: normalized } };
}

/** ISO 8601, naive meaning UTC; stored in the DB's timestamp form. */
function parseIsoTime(text: string): Date | null {
  const t = text.trim();
  if (!/^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$/.test(t)) return null;
  const zoned = /(Z|[+-]\d{2}:?\d{2})$/.test(t) || !t.includes(':') ? t : `${t}Z`;
  const d = new Date(zoned.replace(' ', 'T'));
  return Number.isNaN(d.getTime()) ? null : d;
}

function parseExpiration(text: string | null, bad: (reason: string, property: string) => BarbicanError): string | null {
  if (text === null || !text.trim()) return null;
  const d = parseIsoTime(text);
  if (!d) throw bad("Invalid date for 'expiration'", 'expiration');
  if (d.getTime() <= Date.now()) throw bad("'expiration' is before current time", 'expiration');
  return timestamp(d);
}

/** The list's filters, paging and sort keys; malformed dates or sort keys are Barbican's 400. */
function secretQuery(req: FastifyRequest, projectId: string | null, userId: string | null): SecretQuery {
  const refuse = () => new BarbicanError(400, 'URI provided invalid query string parameters.');
  const dates = (name: string): DateBound[] | undefined => {
    const v = param(req, name);
    if (!v) return undefined;
    return v.split(',').map((part) => {
      const m = /^(gt|gte|lt|lte):(.*)$/.exec(part);
      const d = parseIsoTime(m ? m[2]! : part);
      if (!d) throw refuse();
      return { op: (m?.[1] ?? 'eq') as DateBound['op'], value: timestamp(d) };
    });
  };
  const sort = (param(req, 'sort') ?? '')
    .split(',')
    .filter(Boolean)
    .map((s) => {
      const [key = '', direction = 'asc', ...rest] = s.split(':');
      const column = SORT_COLUMNS[key as keyof typeof SORT_COLUMNS];
      if (!column || rest.length || (direction !== 'asc' && direction !== 'desc')) throw refuse();
      return { column, direction: direction as 'asc' | 'desc' };
    });
  if (new Set(sort.map((s) => s.column)).size !== sort.length) throw refuse();
  const bits = Number(param(req, 'bits') ?? 0);
  return {
    projectId,
    aclUser: param(req, 'acl_only')?.toLowerCase() === 'true' && userId ? userId : null,
    name: param(req, 'name'),
    algorithm: param(req, 'alg'),
    mode: param(req, 'mode'),
    bitLength: Number.isInteger(bits) && bits > 0 ? bits : undefined,
    secretType: param(req, 'secret_type'),
    created: dates('created'),
    updated: dates('updated'),
    expiration: dates('expiration'),
    sort,
    ...paging(req),
  };
}
