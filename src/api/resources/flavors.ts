/**
 * /lbaas/flavors, and the catalog routes availability zones share: named entries bound to a
 * profile, readable by every project, written by admins, refused while a load balancer uses them.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Kysely } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { FlavorTable } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { TSchema } from '../../domain/schema-kit.js';
import { FlavorCreateBody, FlavorUpdateBody } from '../../domain/schemas/flavor.js';
import { authorize, type Resource } from '../../identity/policy.js';
import type { Attribute, ListSpec } from '../listing.js';
import { catalogReadRoutes } from '../shared-routes.js';
import { flavorView } from '../views/flavor.js';
import { NIL_UUID } from './flavorprofiles.js';

export interface CatalogKind<Row> {
  readonly path: string;
  readonly table: 'flavor' | 'availability_zone';
  /** Flavors are keyed by a generated id, availability zones by their name. */
  readonly key: 'id' | 'name';
  readonly policy: Extract<Resource, 'flavor' | 'availability-zone'>;
  /** As in `Flavor <id> not found.` / `… is in use and cannot be modified.` */
  readonly label: string;
  /** As in `A flavor of <name> already exists.` */
  readonly duplicateLabel: string;
  readonly root: string;
  readonly plural: string;
  readonly linksKey: string;
  readonly profile: { readonly table: 'flavor_profile' | 'availability_zone_profile'; readonly column: string };
  /** The load balancer column naming an entry: deleting a used entry is refused. */
  readonly loadBalancerColumn: 'flavor_id' | 'availability_zone';
  readonly attributes: Readonly<Record<string, Attribute>>;
  readonly createBody: TSchema;
  readonly updateBody: TSchema;
  view(row: Row): Record<string, unknown>;
}

type Body = Record<string, string | boolean | null | undefined>;

export const catalogRoutes = <Row>(deps: ApiDeps, kind: CatalogKind<Row>): FastifyPluginAsync => async (app) => {
  // Flavors and availability zones share a shape Kysely's per-table types cannot express.
  const db = deps.db.kysely as unknown as Kysely<any>;
  const list: ListSpec = { table: kind.table, key: kind.key, tagged: false, tieBreakers: [kind.key], attributes: kind.attributes };

  const load = async (q: Kysely<any>, key: string): Promise<Row & Record<string, unknown>> => {
    const row = key === NIL_UUID ? undefined : await q.selectFrom(kind.table).selectAll().where(kind.key, '=', key).executeTakeFirst();
    if (!row) throw apiError('NOT_FOUND', kind.label, key);
    return row as Row & Record<string, unknown>;
  };
  const refuseTakenName = async (q: Kysely<any>, name: string, except: string | null) => {
    let taken = q.selectFrom(kind.table).select(kind.key).where('name', '=', name);
    if (except !== null) taken = taken.where(kind.key, '!=', except);
    if (await taken.executeTakeFirst()) throw apiError('DUPLICATE', `A ${kind.duplicateLabel} of ${name} already exists.`);
  };

  catalogReadRoutes(app, deps, { ...kind, list, load: (key) => load(db, key) });

  app.post(kind.path, { schema: { body: kind.createBody } }, async (req, reply) => {
    authorize(req.ctx, kind.policy, 'post');
    const b = (req.body as Record<string, Body>)[kind.root]!;
    const profileId = b[kind.profile.column] as string;
    const row = {
      ...(kind.key === 'id' ? { id: randomUUID() } : {}),
      name: b.name as string,
      description: (b.description as string | null | undefined) ?? '',
      enabled: b.enabled === false ? 0 : 1,
      [kind.profile.column]: profileId,
    };
    await db.transaction().execute(async (trx) => {
      const profile = await trx.selectFrom(kind.profile.table).select('id').where('id', '=', profileId).executeTakeFirst();
      if (!profile) throw apiError('INVALID_OPTION', profileId, kind.profile.column);
      // The unique name settles races between concurrent creates: the loser inserts nothing.
      const r = await trx.insertInto(kind.table).values(row).onConflict((oc) => oc.column('name').doNothing()).executeTakeFirst();
      if (Number(r.numInsertedOrUpdatedRows ?? 0n) === 0) throw apiError('DUPLICATE', `A ${kind.duplicateLabel} of ${row.name} already exists.`);
    });
    return reply.code(201).send({ [kind.root]: kind.view(row as Row) });
  });

  app.put<{ Params: { key: string } }>(`${kind.path}/:key`, { schema: { body: kind.updateBody } }, async (req) => {
    authorize(req.ctx, kind.policy, 'put');
    const b = (req.body as Record<string, Body>)[kind.root]!;
    const changes: Record<string, string | number> = {};
    if (b.name !== undefined) changes.name = b.name as string;
    if (b.description !== undefined) changes.description = (b.description as string | null) ?? '';
    if (b.enabled !== undefined) changes.enabled = b.enabled ? 1 : 0;
    const updated = await db.transaction().execute(async (trx) => {
      const row = await load(trx, req.params.key);
      if (changes.name !== undefined) await refuseTakenName(trx, changes.name as string, req.params.key);
      if (Object.keys(changes).length) await trx.updateTable(kind.table).set(changes).where(kind.key, '=', req.params.key).execute();
      return { ...row, ...changes };
    });
    return { [kind.root]: kind.view(updated) };
  });

  app.delete<{ Params: { key: string } }>(`${kind.path}/:key`, async (req, reply) => {
    authorize(req.ctx, kind.policy, 'delete');
    await db.transaction().execute(async (trx) => {
      const row = await load(trx, req.params.key);
      const key = row[kind.key] as string;
      const user = await trx.selectFrom('load_balancer').select('id').where(kind.loadBalancerColumn, '=', key).where('provisioning_status', '!=', 'DELETED').executeTakeFirst();
      if (user) throw apiError('IN_USE', kind.label, key);
      await trx.deleteFrom(kind.table).where(kind.key, '=', key).execute();
    });
    return reply.code(204).send();
  });
};

export const flavorKind: CatalogKind<FlavorTable> = {
  path: '/flavors',
  table: 'flavor',
  key: 'id',
  policy: 'flavor',
  label: 'Flavor',
  duplicateLabel: 'flavor',
  root: 'flavor',
  plural: 'flavors',
  linksKey: 'flavors_links',
  profile: { table: 'flavor_profile', column: 'flavor_profile_id' },
  loadBalancerColumn: 'flavor_id',
  attributes: {
    id: { column: 'id', kind: 'uuid' },
    name: { column: 'name', kind: 'string' },
    description: { column: 'description', kind: 'string' },
    enabled: { column: 'enabled', kind: 'bool' },
    flavor_profile_id: { column: 'flavor_profile_id', kind: 'uuid' },
  },
  createBody: FlavorCreateBody,
  updateBody: FlavorUpdateBody,
  view: flavorView,
};

export const flavorRoutes = (deps: ApiDeps): FastifyPluginAsync => catalogRoutes(deps, flavorKind);
