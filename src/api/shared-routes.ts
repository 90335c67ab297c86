/**
 * The routes of a load balancer's tree objects that are the same but for names: the two
 * reads, `GET /<plural>` (filtered, sorted and paged) and `GET /<plural>/<id>` (`fields`
 * applied, `wait` held), the update and delete around what each resource does, and all of them with its
 * create (`treeRoutes`). The admin catalogs' routes are in catalog-routes.ts.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Kysely, Transaction } from 'kysely';
import type { Database } from '../db/schema.js';
import { change } from './change.js';
import type { ApiDeps } from './context.js';
import type { RequestContext } from '../domain/context.js';
import type { Static, TSchema } from '../domain/schema-kit.js';
import type { Resource } from '../identity/policy.js';
import { fieldsOf, listOwned, pickFields, type ListSpec } from './listing.js';
import { loadWaiting } from './wait.js';

/** Every tree object has an id and a provisioning status: its GET may `wait` (wait.ts). */
type Waitable = { id: string; provisioning_status: string };

/** Project-owned objects: the caller's, or every project's for admins and global readers; 404/403 as Octavia answers. */
export interface TreeReads<Row> {
  /** `/listeners`: the collection is answered under `listeners` and `listeners_links`. */
  readonly path: `/${string}`;
  /** The envelope of one object (`listener`), which also names it to the policy. */
  readonly root: Resource;
  readonly list: ListSpec;
  load(deps: ApiDeps, ctx: RequestContext, id: string, action: 'get_one'): Promise<Row>;
  render(rows: Row[], fields?: readonly string[] | null): Promise<Array<Record<string, unknown>>>;
}

export function treeReadRoutes<Row extends Waitable>(app: FastifyInstance, deps: ApiDeps, r: TreeReads<Row>): void {
  const plural = r.path.slice(1);
  app.get(r.path, async (req) => {
    const { items, links } = await listOwned(deps, req, r.root, r.list, r.render);
    return { [plural]: items, [`${plural}_links`]: links };
  });

  app.get<{ Params: { id: string } }>(`${r.path}/:id`, async (req, reply) => {
    const row = await loadWaiting(deps, req, reply, r.list.table, () => r.load(deps, req.ctx, req.params.id, 'get_one'));
    const [view] = await r.render([row]);
    return { [r.root]: pickFields(view!, fieldsOf(req)) };
  });
}

/** `PUT /<plural>/:id` of a tree object: loaded as the caller may update it; `update` answers its view. */
export interface TreeUpdate<Row, S extends TSchema> {
  readonly path: `/${string}`;
  readonly root: string;
  readonly schema: S;
  load(deps: ApiDeps, ctx: RequestContext, id: string, action: 'put'): Promise<Row>;
  update(row: Row, body: Static<S>, req: FastifyRequest): Promise<unknown>;
}

export function treeUpdateRoute<Row, S extends TSchema>(app: FastifyInstance, deps: ApiDeps, r: TreeUpdate<Row, S>): void {
  app.put<{ Params: { id: string } }>(`${r.path}/:id`, { schema: { body: r.schema } }, async (req) => {
    const row = await r.load(deps, req.ctx, req.params.id, 'put');
    return { [r.root]: await r.update(row, req.body as Static<S>, req) };
  });
}

/**
 * `DELETE /<plural>/:id` of a tree object: loaded as the caller may delete it, then `remove`
 * (lock, mark PENDING_DELETE, enqueue) in one transaction; 204.
 */
export function treeDeleteRoute<Row>(
  app: FastifyInstance,
  deps: ApiDeps,
  path: `/${string}`,
  load: (deps: ApiDeps, ctx: RequestContext, id: string, action: 'delete') => Promise<Row>,
  remove: (trx: Transaction<Database>, row: Row, req: FastifyRequest) => Promise<void>,
): void {
  app.delete<{ Params: { id: string } }>(`${path}/:id`, async (req, reply) => {
    const row = await load(deps, req.ctx, req.params.id, 'delete');
    await change(deps, (trx) => remove(trx, row, req));
    return reply.code(204).send();
  });
}

/**
 * Every route of a top-level tree object, its path, envelope and loader named once: the
 * reads, `POST /<plural>` (`create` answers the new object's view, sent with 201), the
 * update and the delete.
 */
export interface TreeRoutes<Row, C extends TSchema, U extends TSchema> extends Omit<TreeReads<Row>, 'load' | 'render'> {
  load(deps: ApiDeps, ctx: RequestContext, id: string, action: 'get_one' | 'put' | 'delete'): Promise<Row>;
  /** The reads render with the app's database. */
  render(q: Kysely<Database>, rows: Row[], fields?: readonly string[] | null): Promise<Array<Record<string, unknown>>>;
  readonly createBody: C;
  create(body: Static<C>, req: FastifyRequest): Promise<unknown>;
  readonly updateBody: U;
  update(row: Row, body: Static<U>, req: FastifyRequest): Promise<unknown>;
  remove(trx: Transaction<Database>, row: Row, req: FastifyRequest): Promise<void>;
}

export function treeRoutes<Row extends Waitable, C extends TSchema, U extends TSchema>(app: FastifyInstance, deps: ApiDeps, r: TreeRoutes<Row, C, U>): void {
  treeReadRoutes(app, deps, { ...r, render: (rows, fields) => r.render(deps.db.kysely, rows, fields) });
  app.post(r.path, { schema: { body: r.createBody } }, async (req, reply) => reply.code(201).send({ [r.root]: await r.create(req.body as Static<C>, req) }));
  treeUpdateRoute(app, deps, { ...r, schema: r.updateBody });
  treeDeleteRoute(app, deps, r.path, r.load, r.remove);
}
