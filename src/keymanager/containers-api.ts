/** `/v1/containers`: generic and certificate containers of secrets of the caller's project. */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { preciseTimestamp } from '../domain/time.js';
import { mayCreate, mayManage, mayRead, parseRef } from './access.js';
import { BarbicanError, ForeignReferenceError, invalidObject, issue, notAllowed } from './errors.js';
import { base, identityOf, isObject, load, otherParams, paging, param, requireJson, type KeyManagerDeps } from './http.js';
import type { ContainerRow } from './store.js';
import { containerRef, containerView, pageLinks } from './views.js';

const TYPES = ['generic', 'rsa', 'certificate'];

/** Which member names each typed container takes (ContainerValidator). */
const NAMES: Readonly<Record<string, { required: string[]; optional: string[]; refusal: string; minimum: string }>> = {
  certificate: {
    required: ['certificate'],
    optional: ['private_key', 'private_key_passphrase', 'intermediates'],
    refusal: "only 'private_key', 'certificate' , 'private_key_passphrase',  or 'intermediates' reference names are allowed for Certificate type",
    minimum: "The minimum required reference name is 'certificate' for Certificate type",
  },
  rsa: {
    required: ['public_key', 'private_key'],
    optional: ['private_key_passphrase'],
    refusal: "only 'private_key', 'public_key' and 'private_key_passphrase' reference names are allowed for RSA type",
    minimum: "The minimum required reference names are 'public_key' and'private_key' for RSA type",
  },
};

export async function containerRoutes(app: FastifyInstance, deps: KeyManagerDeps): Promise<void> {
  app.post('/v1/containers', async (req, reply) => {
    const op = 'Container creation';
    const who = identityOf(req);
    if (!mayCreate(who)) throw notAllowed(op);
    requireJson(req);
    const input = newContainer(req.body, deps.publicUrl());
    // Only the caller's own secrets: a foreign one is "doesn't exist", as in Barbican.
    for (const m of input.members) {
      const secret = await deps.store.secret(m.secretId);
      if (!secret || secret.project_id !== who.projectId) throw new BarbicanError(404, `Secret provided for '${m.name}' doesn't exist.`);
    }
    const now = preciseTimestamp();
    const row: ContainerRow = { id: randomUUID(), project_id: who.projectId!, creator_id: who.userId, name: input.name, type: input.type, created_at: now, updated_at: now };
    await deps.store.insertContainer(row, input.members);
    const ref = containerRef(base(deps), row.id);
    return reply.code(201).header('location', ref).send({ container_ref: ref });
  });

  app.get('/v1/containers', async (req) => {
    const who = identityOf(req);
    if (!mayCreate(who)) throw notAllowed('Containers(s) retrieval');
    const { offset, limit } = paging(req);
    const page = await deps.store.listContainers(who.projectId!, { name: param(req, 'name'), type: param(req, 'type') }, offset, limit);
    if (!page.rows.length) return { containers: [], total: page.total };
    const ids = page.rows.map((c) => c.id);
    const [members, consumers] = await Promise.all([deps.store.members(ids), deps.store.consumers('container', ids)]);
    const b = base(deps);
    return {
      containers: page.rows.map((c) => containerView(b, c, members.filter((m) => m.container_id === c.id), consumers.filter((k) => k.entity_id === c.id))),
      ...pageLinks(b, 'containers', offset, limit, page.total, otherParams(req)),
      total: page.total,
    };
  });

  app.get<{ Params: { id: string } }>('/v1/containers/:id', async (req) => {
    const { row, guard } = await load(deps, 'container', req.params.id);
    if (!mayRead(identityOf(req), guard)) throw notAllowed('Container retrieval');
    return containerView(base(deps), row, await deps.store.members([row.id]), await deps.store.consumers('container', [row.id]));
  });

  app.delete<{ Params: { id: string } }>('/v1/containers/:id', async (req, reply) => {
    const { row, guard } = await load(deps, 'container', req.params.id);
    if (!mayManage(identityOf(req), guard)) throw notAllowed('Container deletion');
    await deps.store.deleteContainer(row.id);
    return reply.code(204).send();
  });
}

interface NewContainer {
  name: string | null;
  type: string;
  members: Array<{ name: string | null; secretId: string }>;
}

/** ContainerValidator, check for check; every member must be a secret of this key manager. */
function newContainer(body: unknown, publicUrl: string): NewContainer {
  const bad = (reason: string, property: string) => invalidObject('Container creation', 'Container', reason, property);
  if (!isObject(body)) throw bad(`${JSON.stringify(body ?? null)} is not of type 'object'`, 'body');
  const { name = null, type, secret_refs: refs = [] } = body;
  if (name !== null && (typeof name !== 'string' || name.length > 255)) throw bad(`${JSON.stringify(name)} is not a valid name`, 'name');
  if (type === undefined) throw bad("'type' is a required property", 'type');
  if (typeof type !== 'string' || !TYPES.includes(type)) throw bad(`${JSON.stringify(type)} is not one of ['generic', 'rsa', 'certificate']`, 'type');
  if (!Array.isArray(refs)) throw bad(`${JSON.stringify(refs)} is not of type 'array'`, 'secret_refs');
  const members = refs.map((r: unknown) => {
    if (!isObject(r) || typeof r.secret_ref !== 'string' || !r.secret_ref) throw bad("'secret_ref' is a required property", 'secret_refs');
    if (r.name !== undefined && r.name !== null && (typeof r.name !== 'string' || r.name.length > 255)) throw bad(`${JSON.stringify(r.name)} is not a valid name`, 'secret_refs');
    let secretId: string;
    try {
      secretId = parseRef(r.secret_ref, publicUrl, 'secret').id;
    } catch (e) {
      if (e instanceof ForeignReferenceError) throw issue('Container creation', 400, 'Provided field value is not supported');
      throw e;
    }
    return { name: (r.name as string | null | undefined) ?? null, secretId };
  });
  const names = new Set(members.map((m) => m.name ?? ''));
  if (names.size !== members.length) throw bad('Duplicate reference names are not allowed', 'secret_refs');
  if (new Set(members.map((m) => m.secretId)).size !== members.length) throw bad('Duplicate secret ids are not allowed', 'secret_refs');
  const rules = NAMES[type];
  if (rules && members.length) {
    if ([...names].some((n) => !rules.required.includes(n) && !rules.optional.includes(n))) throw bad(rules.refusal, 'secret_refs');
    if (!rules.required.every((n) => names.has(n))) throw bad(rules.minimum, 'secret_refs');
  }
  return { name, type, members };
}
