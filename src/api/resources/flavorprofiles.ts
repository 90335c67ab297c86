/**
 * /lbaas/flavorprofiles (admin), and the profile routes availability zone profiles share:
 * a name, an enabled provider and provider-specific data sent as a JSON string.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Kysely } from 'kysely';
import type { ApiDeps } from '../context.js';
import type { FlavorProfileTable } from '../../db/schema.js';
import { apiError } from '../../domain/errors.js';
import type { TSchema } from '../../domain/schema-kit.js';
import { FlavorProfileCreateBody, FlavorProfileUpdateBody } from '../../domain/schemas/flavor.js';
import { authorize, type Resource } from '../../identity/policy.js';
import type { ProviderDriver } from '../../provider-contract/provider.js';
import type { ListSpec } from '../listing.js';
import { catalogReadRoutes } from '../shared-routes.js';
import { flavorProfileView } from '../views/flavor.js';

/** Octavia answers the nil UUID with 404 everywhere: deleted LBs point their flavor at it. */
export const NIL_UUID = '00000000-0000-0000-0000-000000000000';

interface ProfileRow {
  id: string;
  name: string;
  provider_name: string;
}

export interface ProfileKind<Row extends ProfileRow> {
  readonly path: string;
  readonly table: 'flavor_profile' | 'availability_zone_profile';
  readonly dataKey: 'flavor_data' | 'availability_zone_data';
  readonly policy: Extract<Resource, 'flavor-profile' | 'availability-zone-profile'>;
  /** Wording of 404s and of the in-use 409 (Octavia capitalises them differently). */
  readonly notFoundLabel: string;
  readonly inUseLabel: string;
  readonly root: string;
  readonly plural: string;
  readonly linksKey: string;
  /** Which table references a profile, and by which column: a referenced profile cannot change provider or data. */
  readonly usedBy: { readonly table: 'flavor' | 'availability_zone'; readonly column: string };
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

type Body = Record<string, string | null | undefined>;

export const profileRoutes = <Row extends ProfileRow>(deps: ApiDeps, kind: ProfileKind<Row>): FastifyPluginAsync => async (app) => {
  // Both profile tables have the same shape, which Kysely's per-table types cannot express.
  const db = deps.db.kysely as unknown as Kysely<any>;
  const list: ListSpec = {
    table: kind.table,
    tagged: false,
    tieBreakers: ['id'],
    attributes: {
      id: { column: 'id', kind: 'uuid' },
      name: { column: 'name', kind: 'string' },
      provider_name: { column: 'provider_name', kind: 'string' },
      [kind.dataKey]: { column: kind.dataKey, kind: 'string' },
    },
  };

  const load = async (q: Kysely<any>, id: string): Promise<Row> => {
    const row = id === NIL_UUID ? undefined : await q.selectFrom(kind.table).selectAll().where('id', '=', id).executeTakeFirst();
    if (!row) throw apiError('NOT_FOUND', kind.notFoundLabel, id);
    return row as Row;
  };
  const refuseInUse = async (q: Kysely<any>, id: string) => {
    const user = await q.selectFrom(kind.usedBy.table).select(kind.usedBy.column).where(kind.usedBy.column, '=', id).executeTakeFirst();
    if (user) throw apiError('IN_USE', kind.inUseLabel, id);
  };
  // Octavia's order: the JSON first, then whether the provider is enabled, then its verdict.
  const validate = (providerName: string, rawData: string) => {
    const data = parseProfileData(rawData, kind.dataKey);
    kind.validate(deps.providers.get(providerName), data);
  };

  catalogReadRoutes(app, deps, { ...kind, list, load: (id) => load(db, id) });

  app.post(kind.path, { schema: { body: kind.createBody } }, async (req, reply) => {
    authorize(req.ctx, kind.policy, 'post');
    const b = (req.body as Record<string, Body>)[kind.root]!;
    validate(b.provider_name!, b[kind.dataKey]!);
    const row = { id: randomUUID(), name: b.name!, provider_name: b.provider_name!, [kind.dataKey]: b[kind.dataKey]! } as unknown as Row;
    await db.insertInto(kind.table).values(row).execute();
    return reply.code(201).send({ [kind.root]: kind.view(row) });
  });

  app.put<{ Params: { id: string } }>(`${kind.path}/:id`, { schema: { body: kind.updateBody } }, async (req) => {
    authorize(req.ctx, kind.policy, 'put');
    const b = (req.body as Record<string, Body>)[kind.root]!;
    for (const key of ['name', 'provider_name', kind.dataKey]) if (b[key] === null) throw apiError('INVALID_OPTION', 'None', key);
    const changes = Object.fromEntries(Object.entries(b).filter(([, v]) => v !== undefined)) as Record<string, string>;
    const updated = await db.transaction().execute(async (trx) => {
      const row = await load(trx, req.params.id);
      if (changes.provider_name !== undefined || changes[kind.dataKey] !== undefined) {
        await refuseInUse(trx, row.id);
        // Validated as a pair, so a new provider must accept the data it inherits.
        validate(changes.provider_name ?? row.provider_name, changes[kind.dataKey] ?? (row as unknown as Record<string, string>)[kind.dataKey]!);
      }
      if (Object.keys(changes).length) await trx.updateTable(kind.table).set(changes).where('id', '=', row.id).execute();
      return { ...row, ...changes };
    });
    return { [kind.root]: kind.view(updated) };
  });

  app.delete<{ Params: { id: string } }>(`${kind.path}/:id`, async (req, reply) => {
    authorize(req.ctx, kind.policy, 'delete');
    await db.transaction().execute(async (trx) => {
      const row = await load(trx, req.params.id);
      await refuseInUse(trx, row.id);
      await trx.deleteFrom(kind.table).where('id', '=', row.id).execute();
    });
    return reply.code(204).send();
  });
};

export const flavorProfileKind: ProfileKind<FlavorProfileTable> = {
  path: '/flavorprofiles',
  table: 'flavor_profile',
  dataKey: 'flavor_data',
  policy: 'flavor-profile',
  notFoundLabel: 'Flavor Profile',
  inUseLabel: 'Flavor profile',
  root: 'flavorprofile',
  plural: 'flavorprofiles',
  // Singular on purpose: Octavia's key, which clients read.
  linksKey: 'flavorprofile_links',
  usedBy: { table: 'flavor', column: 'flavor_profile_id' },
  createBody: FlavorProfileCreateBody,
  updateBody: FlavorProfileUpdateBody,
  validate: (driver, data) => driver.validateFlavorData(data),
  view: flavorProfileView,
};

export const flavorProfileRoutes = (deps: ApiDeps): FastifyPluginAsync => profileRoutes(deps, flavorProfileKind);
