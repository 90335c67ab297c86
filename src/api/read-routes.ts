/**
 * The two reads most collections have, `GET /<plural>` (filtered, sorted and paged) and
 * `GET /<plural>/<key>` (`fields` applied), for the objects of a load balancer's tree and
 * for the admin catalogs. The writes stay in each resource's own file.
 */
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from './context.js';
import type { RequestContext } from '../domain/context.js';
import { authorize, type Resource } from '../identity/policy.js';
import { fieldsOf, listOwned, listPage, parseListQuery, pickFields, selfUrl, type ListSpec } from './listing.js';

/** Project-owned objects: the caller's, or every project's for admins and global readers; 404/403 as Octavia answers. */
export interface TreeReads<Row> {
  /** `/listeners`: the collection is answered under `listeners` and `listeners_links`. */
  readonly path: `/${string}`;
  /** The envelope of one object (`listener`), which also names it to the policy. */
  readonly root: Resource;
  readonly list: ListSpec;
  load(deps: ApiDeps, ctx: RequestContext, id: string, action: 'get_one'): Promise<Row>;
  render(rows: Row[]): Promise<Array<Record<string, unknown>>>;
}

export function treeReadRoutes<Row>(app: FastifyInstance, deps: ApiDeps, r: TreeReads<Row>): void {
  const plural = r.path.slice(1);
  app.get(r.path, async (req) => {
    const { items, links } = await listOwned(deps, req, r.root, r.list, r.render);
    return { [plural]: items, [`${plural}_links`]: links };
  });

  app.get<{ Params: { id: string } }>(`${r.path}/:id`, async (req) => {
    const [view] = await r.render([await r.load(deps, req.ctx, req.params.id, 'get_one')]);
    return { [r.root]: pickFields(view!, fieldsOf(req)) };
  });
}

/** An admin-managed catalog (flavors, availability zones and their profiles): visible to every project, unscoped. */
export interface CatalogReads<Row> {
  readonly path: string;
  readonly root: string;
  readonly plural: string;
  readonly linksKey: string;
  readonly policy: Resource;
  readonly list: ListSpec;
  load(key: string): Promise<Row>;
  view(row: Row): Record<string, unknown>;
}

export function catalogReadRoutes<Row>(app: FastifyInstance, deps: ApiDeps, r: CatalogReads<Row>): void {
  app.get(r.path, async (req) => {
    authorize(req.ctx, r.policy, 'get_all');
    const q = parseListQuery(req.query as Record<string, string | string[]>, r.list, deps.config.api.paginationMaxLimit);
    const page = await listPage<Row>(deps.db.kysely, r.list, q, (qb) => qb, selfUrl(req, deps.publicUrl()));
    return { [r.plural]: page.rows.map((row) => pickFields(r.view(row), q.fields)), [r.linksKey]: page.links };
  });

  app.get<{ Params: { key: string } }>(`${r.path}/:key`, async (req) => {
    authorize(req.ctx, r.policy, 'get_one');
    return { [r.root]: pickFields(r.view(await r.load(req.params.key)), fieldsOf(req)) };
  });
}
