/**
 * The routes of the admin-managed catalogs, which every project reads and only admins write:
 * flavors and availability zones (named entries bound to a profile, refused while a load
 * balancer uses them), and their profiles (a name, an enabled provider and provider-specific
 * data sent as a JSON string, refused while an entry uses them). Each pair is one set of
 * routes over two tables of the same shape; what differs is a kind's names, which follow
 * Octavia's word for word.
 */
import { catalogCodec } from '../db/records/catalog.js';
import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyPluginAsync } from 'fastify';
import type { Kysely } from 'kysely';
import type { ApiDeps } from './context.js';
import { apiError } from '../domain/errors.js';
import type { TSchema } from '../domain/schema-kit.js';
import { authorize, type Resource } from '../identity/policy.js';
import type { ProviderDriver } from '../provider-contract/provider.js';
import { fieldsOf, listPage, parseListQuery, pickFields, selfUrl, type Attribute, type ListSpec } from './listing.js';

/** Octavia answers the nil UUID with 404 everywhere: deleted LBs point their flavor at it. */
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';

interface CatalogReads<Row> {
  readonly path: string;
  readonly root: string;
  readonly plural: string;
  readonly linksKey: string;
  readonly policy: Resource;
  readonly list: ListSpec;
  load(key: string): Promise<Row>;
  view(row: Row): Record<string, unknown>;
}

/** `GET /<plural>` and `GET /<plural>/<key>`: unscoped, every project sees every entry. */
function catalogReadRoutes<Row>(app: FastifyInstance, deps: ApiDeps, r: CatalogReads<Row>): void {
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

/** What names a flavor or an availability zone; the table is also its envelope. */
export interface CatalogKind<Row> {
  readonly path: string;
  readonly table: 'flavor' | 'availability_zone';
  /** Flavors are keyed by a generated id, availability zones by their name. */
  readonly key: 'id' | 'name';
  readonly policy: Extract<Resource, 'flavor' | 'availability-zone'>;
  /** As in `Flavor <id> not found.` / `… is in use and cannot be modified.`; lower-cased, as in `A flavor of <name> already exists.` */
  readonly label: string;
  /** The load balancer column naming an entry: deleting a used entry is refused. */
  readonly loadBalancerColumn: 'flavor_id' | 'availability_zone';
  readonly createBody: TSchema;
  readonly updateBody: TSchema;
  view(row: Row): Record<string, unknown>;
}

type CatalogBody = Record<string, string | boolean | null | undefined>;

export const catalogRoutes = <Row>(kind: CatalogKind<Row>) => (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  // Flavors and availability zones share a shape Kysely's per-table types cannot express.
  const db = deps.db.kysely as unknown as Kysely<any>;
  const root = kind.table;
  const profile = { table: `${kind.table}_profile`, column: `${kind.table}_profile_id` } as const;
  const duplicate = (name: string) => apiError('DUPLICATE', `A ${kind.label.toLowerCase()} of ${name} already exists.`);
  const attributes: Record<string, Attribute> = {
    ...(kind.key === 'id' ? { id: { column: 'id', kind: 'uuid' } } : {}),
    name: { column: 'name', kind: 'string' },
    description: { column: 'description', kind: 'string' },
    enabled: { column: 'enabled', kind: 'bool' },
    [profile.column]: { column: profile.column, kind: 'uuid' },
  };
  const list: ListSpec = { table: kind.table, key: kind.key, tagged: false, tieBreakers: [kind.key], attributes };

  const load = async (q: Kysely<any>, key: string): Promise<Row & Record<string, unknown>> => {
    const row = key === NIL_UUID ? undefined : await q.selectFrom(kind.table).selectAll().where(kind.key, '=', key).executeTakeFirst();
    if (!row) throw apiError('NOT_FOUND', kind.label, key);
    return row as Row & Record<string, unknown>;
  };
  const refuseTakenName = async (q: Kysely<any>, name: string, except: string | null) => {
    let taken = q.selectFrom(kind.table).select(kind.key).where('name', '=', name);
    if (except !== null) taken = taken.where(kind.key, '!=', except);
    if (await taken.executeTakeFirst()) throw duplicate(name);
  };

  catalogReadRoutes(app, deps, { ...kind, root, plural: `${root}s`, linksKey: `${root}s_links`, list, load: (key) => load(db, key) });

  app.post(kind.path, { schema: { body: kind.createBody } }, async (req, reply) => {
    authorize(req.ctx, kind.policy, 'post');
    const b = (req.body as Record<string, CatalogBody>)[root]!;
    const profileId = b[profile.column] as string;
    const row = {
      ...(kind.key === 'id' ? { id: randomUUID() } : {}),
      name: b.name as string,
      description: (b.description as string | null | undefined) ?? '',
      enabled: catalogCodec.encode({ enabled: b.enabled !== false }).enabled,
      [profile.column]: profileId,
    };
    await db.transaction().execute(async (trx) => {
      const found = await trx.selectFrom(profile.table).select('id').where('id', '=', profileId).executeTakeFirst();
      if (!found) throw apiError('INVALID_OPTION', profileId, profile.column);
      // The unique name settles races between concurrent creates: the loser inserts nothing.
      const r = await trx.insertInto(kind.table).values(row).onConflict((oc) => oc.column('name').doNothing()).executeTakeFirst();
      if (Number(r.numInsertedOrUpdatedRows ?? 0n) === 0) throw duplicate(row.name);
    });
    return reply.code(201).send({ [root]: kind.view(row as Row) });
  });

  app.put<{ Params: { key: string } }>(`${kind.path}/:key`, { schema: { body: kind.updateBody } }, async (req) => {
    authorize(req.ctx, kind.policy, 'put');
    const b = (req.body as Record<string, CatalogBody>)[root]!;
    const changes: Record<string, string | number> = {};
    if (b.name !== undefined) changes.name = b.name as string;
    if (b.description !== undefined) changes.description = (b.description as string | null) ?? '';
    if (b.enabled !== undefined) changes.enabled = catalogCodec.encode({ enabled: Boolean(b.enabled) }).enabled;
    const updated = await db.transaction().execute(async (trx) => {
      const row = await load(trx, req.params.key);
      if (changes.name !== undefined) await refuseTakenName(trx, changes.name as string, req.params.key);
      if (Object.keys(changes).length) await trx.updateTable(kind.table).set(changes).where(kind.key, '=', req.params.key).execute();
      return { ...row, ...changes };
    });
    return { [root]: kind.view(updated) };
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

interface ProfileRow {
  id: string;
  name: string;
  provider_name: string;
}

/** What names a flavor profile or an availability zone profile. */
export interface ProfileKind<Row extends ProfileRow> {
  readonly path: string;
  /** Whose profiles: `flavor` names the table `flavor_profile`, its data `flavor_data` and the flavors' column `flavor_profile_id`. */
  readonly catalog: 'flavor' | 'availability_zone';
  /** The envelope of one profile; the collection's is its plural, the links' key stays singular (Octavia's, which clients read). */
  readonly root: string;
  readonly policy: Extract<Resource, 'flavor-profile' | 'availability-zone-profile'>;
  /** Wording of 404s and of the in-use 409 (Octavia capitalises them differently). */
  readonly notFoundLabel: string;
  readonly inUseLabel: string;
  readonly createBody: TSchema;
  readonly updateBody: TSchema;
  validate(driver: ProviderDriver, data: Record<string, unknown>): void;
  view(row: Row): Record<string, unknown>;
}

/** Profile data is a JSON object inside a string; the provider then judges its keys. */
export function parseProfileData(raw: string, option: string): Record<string, unknown> {
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch {
    throw apiError('INVALID_OPTION', raw, option);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) throw apiError('INVALID_OPTION', raw, option);
  return data as Record<string, unknown>;
}

type ProfileBody = Record<string, string | null | undefined>;

export const profileRoutes = <Row extends ProfileRow>(kind: ProfileKind<Row>) => (deps: ApiDeps): FastifyPluginAsync => async (app) => {
  // Both profile tables have the same shape, which Kysely's per-table types cannot express.
  const db = deps.db.kysely as unknown as Kysely<any>;
  const table = `${kind.catalog}_profile` as const;
  const dataKey = `${kind.catalog}_data` as const;
  const usedBy = { table: kind.catalog, column: `${table}_id` } as const;
  const list: ListSpec = {
    table,
    tagged: false,
    tieBreakers: ['id'],
    attributes: {
      id: { column: 'id', kind: 'uuid' },
      name: { column: 'name', kind: 'string' },
      provider_name: { column: 'provider_name', kind: 'string' },
      [dataKey]: { column: dataKey, kind: 'string' },
    },
  };

  const load = async (q: Kysely<any>, id: string): Promise<Row> => {
    const row = id === NIL_UUID ? undefined : await q.selectFrom(table).selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw apiError('NOT_FOUND', kind.notFoundLabel, id);
    return row as Row;
  };
  const refuseInUse = async (q: Kysely<any>, id: string) => {
    const user = await q.selectFrom(usedBy.table).select(usedBy.column).where(usedBy.column, '=', id).executeTakeFirst();
    if (user) throw apiError('IN_USE', kind.inUseLabel, id);
  };
  // Octavia's order: the JSON first, then whether the provider is enabled, then its verdict.
  const validate = (providerName: string, rawData: string) => {
    const data = parseProfileData(rawData, dataKey);
    kind.validate(deps.providers.get(providerName), data);
  };

  catalogReadRoutes(app, deps, { ...kind, plural: `${kind.root}s`, linksKey: `${kind.root}_links`, list, load: (id) => load(db, id) });

  app.post(kind.path, { schema: { body: kind.createBody } }, async (req, reply) => {
    authorize(req.ctx, kind.policy, 'post');
    const b = (req.body as Record<string, ProfileBody>)[kind.root]!;
    validate(b.provider_name!, b[dataKey]!);
    const row = { id: randomUUID(), name: b.name!, provider_name: b.provider_name!, [dataKey]: b[dataKey]! } as unknown as Row;
    await db.insertInto(table).values(row).execute();
    return reply.code(201).send({ [kind.root]: kind.view(row) });
  });

  app.put<{ Params: { id: string } }>(`${kind.path}/:id`, { schema: { body: kind.updateBody } }, async (req) => {
    authorize(req.ctx, kind.policy, 'put');
    const b = (req.body as Record<string, ProfileBody>)[kind.root]!;
    for (const key of ['name', 'provider_name', dataKey]) if (b[key] === null) throw apiError('INVALID_OPTION', 'None', key);
    const changes = Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined)) as Record<string, string>;
    const updated = await db.transaction().execute(async (trx) => {
      const row = await load(trx, req.params.id);
      if (changes.provider_name !== undefined || changes[dataKey] !== undefined) {
        await refuseInUse(trx, row.id);
        // Validated as a pair, so a new provider must accept the data it inherits.
        validate(changes.provider_name ?? row.provider_name, changes[dataKey] ?? (row as unknown as Record<string, string>)[dataKey]!);
      }
      if (Object.keys(changes).length) await trx.updateTable(table).set(changes).where('id', '=', row.id).execute();
      return { ...row, ...changes };
    });
    return { [kind.root]: kind.view(updated) };
  });

  app.delete<{ Params: { id: string } }>(`${kind.path}/:id`, async (req, reply) => {
    authorize(req.ctx, kind.policy, 'delete');
    await db.transaction().execute(async (trx) => {
      const row = await load(trx, req.params.id);
      await refuseInUse(trx, row.id);
      await trx.deleteFrom(table).where('id', '=', row.id).execute();
    });
    return reply.code(204).send();
  });
};
