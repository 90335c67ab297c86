/**
 * `/v1/{secrets,containers}/<id>/acl` (read grants to users, `project-access`) and
 * `/v1/{secrets,containers}/<id>/consumers` (who uses an entity), the same for both kinds.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { mayManage, mayRead, type EntityKind } from './access.js';
import { BarbicanError, invalidObject, notAllowed } from './errors.js';
import { base, identityOf, isObject, LABEL, load, paging, requireJson, type KeyManagerDeps } from './http.js';
import type { ConsumerKey } from './store.js';
import { aclView, containerConsumerView, containerView, pageLinks, secretConsumerView, secretView } from './views.js';

export async function grantRoutes(app: FastifyInstance, deps: KeyManagerDeps): Promise<void> {
  for (const kind of ['secret', 'container'] as const) {
    aclRoutes(app, deps, kind);
    consumerRoutes(app, deps, kind);
  }
}

type ById = { Params: { id: string } };

function aclRoutes(app: FastifyInstance, deps: KeyManagerDeps, kind: EntityKind): void {
  const path = `/v1/${kind}s/:id/acl`;
  const label = `${LABEL[kind]}ACL(s)`;
  const managed = async (req: FastifyRequest<ById>, op: string) => {
    const { row, guard } = await load(deps, kind, req.params.id);
    if (!mayManage(identityOf(req), guard)) throw notAllowed(op);
    return { id: row.id, acl: guard.acl };
  };
  const aclRef = (id: string) => `${base(deps)}/${kind}s/${id}/acl`;

  app.get<ById>(path, async (req) => aclView(await deps.store.acl(kind, (await managed(req, `${label} retrieval`)).id)));

  // PUT replaces: a missing `read` removes the ACL; `project-access` defaults to true, users to none.
  app.put<ById>(path, async (req) => {
    const op = `${label} Update`;
    const { id } = await managed(req, op);
    const read = aclInput(req, op);
    if (read) await deps.store.putAcl(kind, id, read.projectAccess ?? true, read.users ?? []);
    else await deps.store.deleteAcl(kind, id);
    return { acl_ref: aclRef(id) };
  });

  // PATCH merges: what the body leaves out keeps its current value.
  app.patch<ById>(path, async (req) => {
    const op = `${label} Update`;
    const { id, acl } = await managed(req, op);
    const read = aclInput(req, op);
    if (read) await deps.store.putAcl(kind, id, read.projectAccess ?? acl?.projectAccess ?? true, read.users ?? acl?.users ?? []);
    return { acl_ref: aclRef(id) };
  });

  app.delete<ById>(path, async (req, reply) => {
    await deps.store.deleteAcl(kind, (await managed(req, `${label} deletion`)).id);
    return reply.code(200).send();
  });
}

/** ACLValidator: only `read`, holding only `users` (strings) and `project-access` (boolean). Empty means none. */
function aclInput(req: FastifyRequest, op: string): { projectAccess?: boolean; users?: string[] } | null {
  requireJson(req);
  const bad = (reason: string, property: string) => invalidObject(op, 'ACL', reason, property);
  const body = req.body;
  if (!isObject(body)) throw bad(`${JSON.stringify(body ?? null)} is not of type 'object'`, 'body');
  for (const key of Object.keys(body)) if (key !== 'read') throw bad(`Additional properties are not allowed ('${key}' was unexpected)`, key);
  const read = body.read;
  if (read === undefined) return null;
  if (!isObject(read)) throw bad(`${JSON.stringify(read)} is not of type 'object'`, 'read');
  for (const key of Object.keys(read)) if (key !== 'users' && key !== 'project-access') throw bad(`Additional properties are not allowed ('${key}' was unexpected)`, 'read');
  const { users, 'project-access': projectAccess } = read;
  if (users !== undefined && (!Array.isArray(users) || users.some((u) => typeof u !== 'string' || u.length > 255))) throw bad(`${JSON.stringify(users)} is not a list of user ids`, 'users');
  if (projectAccess !== undefined && typeof projectAccess !== 'boolean') throw bad(`${JSON.stringify(projectAccess)} is not of type 'boolean'`, 'project-access');
  if (users === undefined && projectAccess === undefined) return null;
  return { ...(users !== undefined && { users: [...new Set(users as string[])] }), ...(projectAccess !== undefined && { projectAccess }) };
}

function consumerRoutes(app: FastifyInstance, deps: KeyManagerDeps, kind: EntityKind): void {
  const path = `/v1/${kind}s/:id/consumers`;
  const label = LABEL[kind];
  const readable = async (req: FastifyRequest<ById>, op: string) => {
    const loaded = await load(deps, kind, req.params.id);
    if (!mayRead(identityOf(req), loaded.guard)) throw notAllowed(op);
    return loaded.row;
  };
  /** What POST and DELETE answer: the entity, consumers included. */
  const entityView = async (id: string) => {
    const b = base(deps);
    const consumers = await deps.store.consumers(kind, [id]);
    if (kind === 'container') return containerView(b, (await deps.store.container(id))!, await deps.store.members([id]), consumers);
    return { ...secretView(b, (await deps.store.secret(id))!), consumers: consumers.map((c) => ({ service: c.service, resource_type: c.resource_type, resource_id: c.resource_id })) };
  };

  app.get<ById>(path, async (req) => {
    const row = await readable(req, `${label}Consumers(s) retrieval`);
    const { offset, limit } = paging(req);
    const all = await deps.store.consumers(kind, [row.id]);
    if (!all.length) return { consumers: [], total: 0 };
    const view = kind === 'secret' ? secretConsumerView : containerConsumerView;
    return { consumers: all.slice(offset, offset + limit).map(view), ...pageLinks(base(deps), `${kind}s/${row.id}/consumers`, offset, limit, all.length, ''), total: all.length };
  });

  app.post<ById>(path, async (req) => {
    const op = `${label}Consumer creation`;
    const row = await readable(req, op);
    requireJson(req);
    await deps.store.addConsumer(kind, row.id, identityOf(req).projectId, consumerInput(kind, req.body, op));
    return entityView(row.id);
  });

  app.delete<ById>(path, async (req) => {
    const op = `${label}Consumer deletion`;
    const row = await readable(req, op);
    requireJson(req);
    const key = consumerInput(kind, req.body, op);
    const consumer = await deps.store.consumer(kind, row.id, key);
    if (!consumer) throw new BarbicanError(404, 'Consumer not found.');
    const project = identityOf(req).projectId;
    if (consumer.project_id !== project && row.project_id !== project) throw new BarbicanError(403, 'Not Allowed. Sorry, only the creator of a consumer can delete it.');
    await deps.store.removeConsumer(kind, row.id, key);
    return entityView(row.id);
  });
}

/** Secrets take `{service, resource_type, resource_id}`; containers Barbican's older `{name, URL}`. */
function consumerInput(kind: EntityKind, body: unknown, op: string): ConsumerKey {
  const schema = kind === 'secret' ? 'Secret Consumer' : 'Consumer';
  const bad = (reason: string, property: string) => invalidObject(op, schema, reason, property);
  if (!isObject(body)) throw bad(`${JSON.stringify(body ?? null)} is not of type 'object'`, 'body');
  const text = (key: string, max: number): string => {
    const v = body[key];
    if (v === undefined) throw bad(`'${key}' is a required property`, key);
    if (typeof v !== 'string' || v.length < 1 || v.length > max) throw bad(`${JSON.stringify(v)} is not a string of 1 to ${max} characters`, key);
    return v;
  };
  if (kind === 'secret') return { service: text('service', 255), resourceType: text('resource_type', 255), resourceId: text('resource_id', 255) };
  return { service: text('name', 36), resourceType: '', resourceId: text('URL', 255) };
}
