/**
 * GET-list semantics shared by every collection: filters on any attribute (AND), tag filters,
 * sort (`sort=` or `sort_key`/`sort_dir`), keyset pagination by marker, `fields`, and the
 * `<plural>_links` that clients follow.
 */
import { sql, type Kysely, type SelectQueryBuilder, type Expression, type SqlBool, type ExpressionBuilder } from 'kysely';
import type { FastifyRequest } from 'fastify';
import type { TObject, TSchema } from '@sinclair/typebox';
import { apiError } from '../domain/errors.js';
import { isUuid, normaliseUuid } from '../domain/net.js';
import { epochMsFromIso } from '../domain/time.js';
import type { RequestContext } from '../domain/context.js';
import type { TableName } from '../db/schema.js';
import type { ApiDeps } from './context.js';
import { authorize, canSeeAllProjects, type Resource } from '../identity/policy.js';

/** `epoch-ms`: an epoch-milliseconds column, ISO 8601 on the wire (a filter names it so too). */
export type AttrKind = 'string' | 'int' | 'bool' | 'float' | 'uuid' | 'epoch-ms';

export interface Attribute {
  readonly column: string;
  readonly kind: AttrKind;
  /** false for JSON/list attributes: shown but neither filtered nor sorted on. */
  readonly queryable?: boolean;
}

/** Attributes every object of the load-balancer tree has, filterable under their API names. */
export const treeAttributes: Readonly<Record<string, Attribute>> = {
  id: { column: 'id', kind: 'uuid' },
  provisioning_status: { column: 'provisioning_status', kind: 'string' },
  operating_status: { column: 'operating_status', kind: 'string' },
  admin_state_up: { column: 'admin_state_up', kind: 'bool' },
  project_id: { column: 'project_id', kind: 'string' },
  tenant_id: { column: 'project_id', kind: 'string' },
  created_at: { column: 'created_at', kind: 'string' },
  updated_at: { column: 'updated_at', kind: 'string' },
};

/** The kind of a request schema's scalar field (a nullable one by its other member); lists and maps have none. */
function schemaKind(schema: TSchema): AttrKind | undefined {
  const own = schema.anyOf ? (schema.anyOf as TSchema[]).find((s) => s.type !== 'null') : schema;
  switch (own?.type) {
    case 'integer':
      return 'int';
    case 'number':
      // An enum of whole numbers (HTTP redirect codes) is an integer column; 1.0/1.1 (HTTP versions) is not.
      return Array.isArray(own.enum) && own.enum.every(Number.isInteger) ? 'int' : 'float';
    case 'boolean':
      return 'bool';
    case 'string':
      return own.format === 'uuid' ? 'uuid' : 'string';
    default:
      return undefined;
  }
}

/** Every scalar field of a create body, filterable under its own name and column: a new field is a new filter. */
function schemaAttributes(body: TObject): Record<string, Attribute> {
  const out: Record<string, Attribute> = {};
  for (const [name, schema] of Object.entries(body.properties)) {
    const kind = schemaKind(schema);
    if (kind) out[name] = { column: name, kind };
  }
  return out;
}

/**
 * A tree object's filters: its create body's scalar fields, the attributes every tree object has,
 * and `stored`, columns the body does not name or names under another column. `requestOnly`
 * fields of the body are not stored, so nothing filters on them.
 */
export function treeObjectAttributes(body: TObject, { stored = {}, requestOnly = [] }: { stored?: Record<string, Attribute>; requestOnly?: readonly string[] } = {}): Record<string, Attribute> {
  const fromBody = Object.entries(schemaAttributes(body)).filter(([name]) => !requestOnly.includes(name));
  return { ...Object.fromEntries(fromBody), ...treeAttributes, ...stored };
}

/** The API's `loadbalancer_id` is the column `load_balancer_id`. */
export const loadBalancerIdAttribute: Readonly<Record<string, Attribute>> = { loadbalancer_id: { column: 'load_balancer_id', kind: 'uuid' } };

export interface ListSpec {
  readonly table: TableName;
  /** Primary key column (availability zones are keyed by name). */
  readonly key?: string;
  readonly attributes: Readonly<Record<string, Attribute>>;
  readonly tagged: boolean;
  /** Collections owned by a project are scoped to the caller's unless it may see all. */
  readonly projectColumn?: string;
  /** Sort tie-breakers appended after the caller's keys. */
  readonly tieBreakers?: readonly string[];
  /**
   * Fields the view computes rather than copies from their own column: the columns each reads (none
   * for a relation read from other tables). A `fields` selection of columns and of these reads only
   * what they need.
   */
  readonly computed?: Readonly<Record<string, readonly string[]>>;
}

/** Whether a `fields` selection (null or empty: every field) asks for `name`. */
export function wants(fields: readonly string[] | null | undefined, name: string): boolean {
  return !fields?.length || fields.includes(name);
}

/**
 * The columns a page reads for a `fields` selection: the key and those the fields need, when each
 * is a column or a computed field of the spec; null (every column) for a field the spec does not
 * know, whatever it may be computed from.
 */
function pageColumns(spec: ListSpec, fields: readonly string[] | null): string[] | null {
  if (!fields?.length) return null;
  const columns = new Set([spec.key ?? 'id']);
  for (const field of fields) {
    const computed = spec.computed && Object.hasOwn(spec.computed, field) ? spec.computed[field] : undefined;
    if (computed) {
      for (const column of computed) columns.add(column);
      continue;
    }
    const attr = attributeOf(spec, field);
    if (!attr) return null;
    columns.add(attr.column);
  }
  return [...columns];
}

interface SortKey {
  attr: string;
  column: string;
  desc: boolean;
}

/** How an unlimited page names its limit in links: Octavia and Ostia both read it back as unlimited. */
const UNLIMITED = 'infinite';

export interface ListQuery {
  /** null: unlimited (`limit` < 1 or `infinite`, as Octavia's pagination helper reads it), past the cap too. */
  limit: number | null;
  marker: string | null;
  pageReverse: boolean;
  sort: SortKey[];
  fields: string[] | null;
  filters: Array<{ column: string; value: unknown }>;
  tags: { all: string[]; any: string[]; notAll: string[]; notAny: string[] };
  /** The caller's own query minus paging keys: kept in the links so filters survive paging. */
  passthrough: Array<[string, string]>;
}

const PAGING_KEYS = new Set(['limit', 'marker', 'page_reverse']);
const CONTROL_KEYS = new Set(['limit', 'marker', 'page_reverse', 'sort', 'sort_key', 'sort_dir', 'fields', 'tags', 'tags-any', 'not-tags', 'not-tags-any']);
const TRUE = new Set(['true', 't', 'yes', 'y', 'on', '1']);
const FALSE = new Set(['false', 'f', 'no', 'n', 'off', '0']);

type RawQuery = Record<string, string | string[] | undefined>;

function many(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return (Array.isArray(v) ? v : [v]).flatMap((s) => s.split(',')).map((s) => s.trim()).filter(Boolean);
}

function single(v: string | string[] | undefined): string | undefined {
  return Array.isArray(v) ? v[v.length - 1] : v;
}

function coerce(attr: Attribute, raw: string): unknown {
  switch (attr.kind) {
    case 'bool': {
      const s = raw.toLowerCase();
      if (TRUE.has(s)) return 1;
      if (FALSE.has(s)) return 0;
      throw apiError('INVALID_FILTER');
    }
    case 'int': {
      if (!/^-?\d+$/.test(raw)) throw apiError('INVALID_FILTER');
      return Number(raw);
    }
    case 'float': {
      const n = Number(raw);
      if (!Number.isFinite(n)) throw apiError('INVALID_FILTER');
      return n;
    }
    case 'uuid':
      return isUuid(raw) ? normaliseUuid(raw) : raw;
    case 'epoch-ms': {
      const ms = epochMsFromIso(raw);
      if (ms === null) throw apiError('INVALID_FILTER');
      return ms;
    }
    default:
      return raw;
  }
}

/** Own attributes only: `?constructor=` or `sort=toString` name nothing. */
function attributeOf(spec: ListSpec, name: string): Attribute | undefined {
  return Object.hasOwn(spec.attributes, name) ? spec.attributes[name] : undefined;
}

export function parseListQuery(query: RawQuery, spec: ListSpec, maxLimit: number): ListQuery {
  const rawLimit = single(query.limit);
  let limit: number | null = maxLimit;
  if (rawLimit !== undefined && rawLimit !== '') {
    if (rawLimit === UNLIMITED) limit = null;
    else if (!/^-?\d+$/.test(rawLimit)) throw apiError('INVALID_LIMIT', rawLimit);
    else limit = Number(rawLimit) < 1 ? null : Math.min(Number(rawLimit), maxLimit);
  }
  const sort: SortKey[] = [];
  const sortParam = many(query.sort);
  const addSort = (attr: string, dir: string) => {
    const a = attributeOf(spec, attr);
    if (!a || a.queryable === false) throw apiError('INVALID_SORT_KEY', attr);
    if (dir !== 'asc' && dir !== 'desc') throw apiError('INVALID_SORT_DIR', dir);
    sort.push({ attr, column: a.column, desc: dir === 'desc' });
  };
  if (sortParam.length) {
    for (const part of sortParam) {
      const [k, d] = part.split(':');
      addSort(k!, (d ?? 'asc').toLowerCase());
    }
  } else {
    const keys = many(query.sort_key);
    const dirs = many(query.sort_dir);
    keys.forEach((k, i) => addSort(k, (dirs[i] ?? 'asc').toLowerCase()));
  }
  for (const tie of spec.tieBreakers ?? ['created_at', spec.key ?? 'id']) {
    if (!sort.some((s) => s.column === tie)) sort.push({ attr: tie, column: tie, desc: false });
  }
  const filters: ListQuery['filters'] = [];
  const passthrough: Array<[string, string]> = [];
  for (const [key, value] of Object.entries(query)) {
    if (value === undefined) continue;
    if (!PAGING_KEYS.has(key)) for (const v of [value].flat()) passthrough.push([key, v]);
    if (CONTROL_KEYS.has(key)) continue;
    // Octavia also accepts the data-model name of an attribute (openstacksdk sends `load_balancer_id`).
    const attr = attributeOf(spec, key) ?? Object.values(spec.attributes).find((a) => a.column === key);
    if (!attr || attr.queryable === false || Array.isArray(value)) throw apiError('INVALID_FILTER');
    filters.push({ column: attr.column, value: coerce(attr, value) });
  }
  const rawFields = query.fields;
  return {
    limit,
    marker: single(query.marker) ?? null,
    pageReverse: TRUE.has((single(query.page_reverse) ?? '').toLowerCase()),
    sort,
    fields: rawFields === undefined ? null : many(rawFields),
    filters,
    tags: { all: many(query.tags), any: many(query['tags-any']), notAll: many(query['not-tags']), notAny: many(query['not-tags-any']) },
    passthrough,
  };
}

// Listing is generic over tables, which Kysely's static types cannot follow.
type AnyDb = Kysely<any>;
type AnyQuery = SelectQueryBuilder<any, any, any>;
type EB = ExpressionBuilder<any, any>;

function tagExists(eb: EB, table: string, key: string, tag: string): Expression<SqlBool> {
  return eb.exists(eb.selectFrom('tag').select('tag.tag').whereRef('tag.resource_id', '=', `${table}.${key}`).where('tag.tag', '=', tag));
}

export function applyFilters(qb: AnyQuery, spec: ListSpec, q: ListQuery): AnyQuery {
  const t = spec.table;
  const key = spec.key ?? 'id';
  for (const f of q.filters) qb = qb.where(`${t}.${f.column}`, '=', f.value);
  const { all, any, notAll, notAny } = q.tags;
  if (all.length) qb = qb.where((eb: EB) => eb.and(all.map((tag) => tagExists(eb, t, key, tag))));
  if (any.length) qb = qb.where((eb: EB) => eb.or(any.map((tag) => tagExists(eb, t, key, tag))));
  if (notAll.length) qb = qb.where((eb: EB) => eb.not(eb.and(notAll.map((tag) => tagExists(eb, t, key, tag)))));
  if (notAny.length) qb = qb.where((eb: EB) => eb.not(eb.or(notAny.map((tag) => tagExists(eb, t, key, tag)))));
  return qb;
}

/**
 * Rows strictly after the marker row in the sort order. NULLs sort first ascending and last
 * descending on both databases (we say so explicitly), which fixes how they compare.
 */
function afterMarker(eb: EB, table: string, sort: SortKey[], marker: Record<string, unknown>): Expression<SqlBool> {
  const ors: Expression<SqlBool>[] = [];
  for (let i = 0; i < sort.length; i++) {
    const ands: Expression<SqlBool>[] = [];
    for (let j = 0; j < i; j++) {
      const c = `${table}.${sort[j]!.column}`;
      const v = marker[sort[j]!.column];
      ands.push(v === null ? eb(c, 'is', null) : eb(c, '=', v));
    }
    const { column, desc } = sort[i]!;
    const c = `${table}.${column}`;
    const v = marker[column];
    if (v === null) {
      if (desc) continue; // nothing sorts after NULL when NULLs come last
      ands.push(eb(c, 'is not', null));
    } else if (desc) {
      ands.push(eb.or([eb(c, '<', v), eb(c, 'is', null)]));
    } else {
      ands.push(eb(c, '>', v));
    }
    ors.push(eb.and(ands));
  }
  return ors.length ? eb.or(ors) : eb.val(false) as unknown as Expression<SqlBool>;
}

export interface Page<Row> {
  rows: Row[];
  links: Array<{ href: string; rel: 'next' | 'previous' }>;
}

/**
 * Runs a list query. `scope` narrows the base query (project, parent id) before filters.
 * Returns the page rows in the requested order plus next/previous links.
 */
export async function listPage<Row>(
  db: Kysely<any>,
  spec: ListSpec,
  q: ListQuery,
  scope: (qb: AnyQuery) => AnyQuery,
  selfUrl: string,
): Promise<Page<Row>> {
  const t = spec.table;
  const key = spec.key ?? 'id';
  const sort = q.pageReverse ? q.sort.map((s) => ({ ...s, desc: !s.desc })) : q.sort;
  const columns = pageColumns(spec, q.fields);
  let qb = scope(columns ? (db as AnyDb).selectFrom(t).select(columns.map((c) => `${t}.${c}`)) : (db as AnyDb).selectFrom(t).selectAll(t));
  qb = applyFilters(qb, spec, q);
  if (q.marker !== null) {
    const marker = await (db as AnyDb).selectFrom(t).selectAll().where(key, '=', q.marker).executeTakeFirst();
    if (!marker) throw apiError('INVALID_MARKER', q.marker);
    qb = qb.where((eb: EB) => afterMarker(eb, t, sort, marker as Record<string, unknown>));
  }
  for (const s of sort) qb = qb.orderBy(sql.raw(`${t}.${s.column} ${s.desc ? 'desc nulls last' : 'asc nulls first'}`));
  if (q.limit !== null) qb = qb.limit(q.limit);
  let rows = (await qb.execute()) as Row[];
  if (q.pageReverse) rows = rows.reverse();
  const links: Page<Row>['links'] = [];
  const href = (marker: string, reverse: boolean) => {
    const params = new URLSearchParams([['limit', String(q.limit ?? UNLIMITED)], ...q.passthrough, ['marker', marker]]);
    if (reverse) params.append('page_reverse', 'True');
    return `${selfUrl}?${params.toString()}`;
  };
  const keyOf = (r: Row) => String((r as Record<string, unknown>)[key]);
  // An unlimited page holds every row there is, so it never has a `next` (Octavia 11 compares the
  // page length with a None limit there, a TypeError under Python 3, so it offers no model).
  const full = q.limit !== null && rows.length >= q.limit;
  if (rows.length) {
    if (full || (q.pageReverse && q.marker !== null)) {
      // Going forward, a full page may have more after it; going back, the marker had rows after it.
      if (!q.pageReverse || q.marker !== null) links.push({ href: href(keyOf(rows[rows.length - 1]!), false), rel: 'next' });
    }
    if (q.marker !== null && (!q.pageReverse || full)) links.push({ href: href(keyOf(rows[0]!), true), rel: 'previous' });
  }
  return { rows, links };
}

/** Applies `fields=` to rendered objects (list items and GET-one alike). */
export function pickFields<T extends Record<string, unknown>>(obj: T, fields: string[] | null): Partial<T> {
  if (!fields || !fields.length) return obj;
  const out: Partial<T> = {};
  for (const f of fields) if (Object.hasOwn(obj, f)) (out as Record<string, unknown>)[f] = obj[f];
  return out;
}

/** `fields` of a GET-one request. */
export function fieldsOf(req: FastifyRequest): string[] | null {
  const v = (req.query as RawQuery).fields;
  return v === undefined ? null : many(v);
}

/** The URL a list was requested at, without its query: the base of paging links. */
export function selfUrl(req: FastifyRequest, publicUrl: string): string {
  return `${publicUrl}${req.url.split('?')[0]}`;
}

/**
 * Project scoping of lists: admins and global readers see every project (and may filter by
 * one); everyone else sees only their own, and naming another project is a 403.
 */
export function projectScope(ctx: RequestContext, seeAll: boolean, query: RawQuery, column: string) {
  const project = listedProject(ctx, seeAll, query);
  // Who sees every project is narrowed by the `project_id` filter of the list itself.
  if (seeAll) return (qb: AnyQuery) => qb;
  return (qb: AnyQuery) => qb.where(column, '=', project);
}

/** The project a list shows by projectScope's rule: the one asked for, or every one (undefined) for who may see all. */
export function listedProject(ctx: RequestContext, seeAll: boolean, query: RawQuery): string | undefined {
  const asked = single(query.project_id);
  if (seeAll) return asked;
  if (!ctx.projectId) throw apiError('POLICY_FORBIDDEN');
  if (asked !== undefined && asked !== ctx.projectId) throw apiError('POLICY_FORBIDDEN');
  return ctx.projectId;
}

/** Renders a page's rows; `fields` (null: all) lets it skip the relations nobody asked for. */
type Render<Row> = (rows: Row[], fields: readonly string[] | null) => Promise<Array<Record<string, unknown>>>;

async function renderPage<Row>(deps: ApiDeps, req: FastifyRequest, spec: ListSpec, q: ListQuery, scope: (qb: AnyQuery) => AnyQuery, render: Render<Row>) {
  const page = await listPage<Row>(deps.db.kysely, spec, q, scope, selfUrl(req, deps.publicUrl()));
  const items = await render(page.rows, q.fields);
  return { items: items.map((i) => pickFields(i, q.fields)), links: page.links };
}

/** The RBAC of listing a project-owned collection; true when the caller may list every project's. */
export function authorizeOwnedList(ctx: RequestContext, resource: Resource): boolean {
  const seeAll = canSeeAllProjects(ctx);
  authorize(ctx, resource, seeAll ? 'get_all-global' : 'get_all', ctx.projectId);
  return seeAll;
}

/**
 * A project-owned collection: the caller's own objects, or every project's for admins and
 * global readers, with the query's filters, sort, paging and fields applied.
 */
export async function listOwned<Row>(deps: ApiDeps, req: FastifyRequest, resource: Resource, spec: ListSpec, render: Render<Row>) {
  const ctx = req.ctx;
  const seeAll = authorizeOwnedList(ctx, resource);
  const query = req.query as RawQuery;
  const q = parseListQuery(query, spec, deps.config.api.paginationMaxLimit);
  return renderPage(deps, req, spec, q, projectScope(ctx, seeAll, query, `${spec.table}.${spec.projectColumn ?? 'project_id'}`), render);
}

/** A collection under a parent the caller was already authorised for (members of a pool, rules of a policy). */
export async function listWithin<Row>(deps: ApiDeps, req: FastifyRequest, spec: ListSpec, parent: { column: string; id: string }, render: Render<Row>) {
  const q = parseListQuery(req.query as RawQuery, spec, deps.config.api.paginationMaxLimit);
  return renderPage(deps, req, spec, q, (qb) => qb.where(`${spec.table}.${parent.column}`, '=', parent.id), render);
}
