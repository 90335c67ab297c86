/**
 * OVSDB values (RFC 7047 §5.1) both ways, in one place.
 *
 * In TypeScript: an atom is a string, number, boolean, Uuid or NamedUuid; a set is an array of
 * atoms; a map is a Map of atom to atom. On the wire a set of exactly one element may be a bare
 * atom, so decoding a set or map column needs its schema type (see ColumnType) to be exact.
 */

export class Uuid {
  constructor(readonly uuid: string) {
    if (!UUID_RE.test(uuid)) throw new TypeError(`not a UUID: ${JSON.stringify(uuid)}`);
  }
  toString(): string {
    return this.uuid;
  }
}

/** A row inserted earlier in the same transaction, by its `uuid-name`. */
export class NamedUuid {
  constructor(readonly name: string) {
    if (!NAME_RE.test(name)) throw new TypeError(`not an OVSDB identifier: ${JSON.stringify(name)}`);
  }
}

export type Atom = string | number | boolean | Uuid | NamedUuid;
export type Datum = Atom | Atom[] | Map<Atom, Atom>;

const UUID_RE = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]*$/;

export type AtomicType = 'integer' | 'real' | 'boolean' | 'string' | 'uuid';

/** A column type reduced to what decoding needs (RFC 7047 §3.2 <type>). */
export interface ColumnType {
  key: AtomicType;
  value?: AtomicType;
  min: number;
  max: number | 'unlimited';
}

export function isSetType(t: ColumnType): boolean {
  return t.value === undefined && !(t.min === 1 && t.max === 1);
}

export function isMapType(t: ColumnType): boolean {
  return t.value !== undefined;
}

export class DatumError extends Error {}

export function encodeAtom(a: Atom): unknown {
  if (a instanceof Uuid) return ['uuid', a.uuid];
  if (a instanceof NamedUuid) return ['named-uuid', a.name];
  if (typeof a === 'number' && !Number.isFinite(a)) throw new DatumError(`not a finite number: ${a}`);
  if (typeof a === 'string' || typeof a === 'number' || typeof a === 'boolean') return a;
  throw new DatumError(`not an OVSDB atom: ${String(a)}`);
}

/** A plain object is accepted as a string-keyed map (external_ids, options). */
export function encodeDatum(d: Datum | Record<string, Atom>): unknown {
  if (Array.isArray(d)) return ['set', d.map(encodeAtom)];
  if (d instanceof Map) return ['map', [...d].map(([k, v]) => [encodeAtom(k), encodeAtom(v)])];
  if (isPlainObject(d)) return ['map', Object.entries(d).map(([k, v]) => [k, encodeAtom(v)])];
  return encodeAtom(d as Atom);
}

export function decodeAtom(j: unknown): Atom {
  if (typeof j === 'string' || typeof j === 'boolean') return j;
  if (typeof j === 'number') return j;
  if (Array.isArray(j) && j.length === 2 && typeof j[1] === 'string') {
    if (j[0] === 'uuid') return new Uuid(j[1]);
    if (j[0] === 'named-uuid') return new NamedUuid(j[1]);
  }
  throw new DatumError(`not an OVSDB atom: ${JSON.stringify(j)}`);
}

/** Without a type, a bare atom stays an atom; with a set type it becomes a one-element array. */
export function decodeDatum(j: unknown, type?: ColumnType): Datum {
  if (Array.isArray(j) && j[0] === 'set' && j.length === 2 && Array.isArray(j[1])) {
    const items = j[1].map(decodeAtom);
    if (type && !isSetType(type)) {
      if (items.length === 1) return items[0] as Atom;
      throw new DatumError(`a set where a single value was expected: ${JSON.stringify(j)}`);
    }
    return items;
  }
  if (Array.isArray(j) && j[0] === 'map' && j.length === 2 && Array.isArray(j[1])) {
    const m = new Map<Atom, Atom>();
    for (const pair of j[1]) {
      if (!Array.isArray(pair) || pair.length !== 2) throw new DatumError(`bad map pair: ${JSON.stringify(pair)}`);
      m.set(mapKey(decodeAtom(pair[0])), decodeAtom(pair[1]));
    }
    return m;
  }
  const atom = decodeAtom(j);
  if (type && isSetType(type)) return [atom];
  return atom;
}

/**
 * Map keys compare by identity in JS; Uuid keys would never match, so uuids key maps by their
 * string form. Callers look up a uuid-keyed map with `.get(uuid.uuid)`.
 */
function mapKey(a: Atom): Atom {
  return a instanceof Uuid ? a.uuid : a;
}

export function atomEquals(a: Atom, b: Atom): boolean {
  if (a instanceof Uuid || b instanceof Uuid) return a instanceof Uuid && b instanceof Uuid && a.uuid === b.uuid;
  if (a instanceof NamedUuid || b instanceof NamedUuid) {
    return a instanceof NamedUuid && b instanceof NamedUuid && a.name === b.name;
  }
  return a === b;
}

/** Order-insensitive for sets and maps, as OVSDB compares them. */
export function datumEquals(a: Datum, b: Datum): boolean {
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x) => b.some((y) => atomEquals(x, y))) && b.every((y) => a.some((x) => atomEquals(x, y)));
  }
  if (a instanceof Map || b instanceof Map) {
    if (!(a instanceof Map) || !(b instanceof Map) || a.size !== b.size) return false;
    for (const [k, v] of a) {
      if (!b.has(k) || !atomEquals(v, b.get(k) as Atom)) return false;
    }
    return true;
  }
  return atomEquals(a, b);
}

/**
 * update2's "modify" carries a diff (RFC 7047 extension in ovsdb-server(7)): for a set, the
 * elements to toggle; for a map, keys to remove (same value), change (other value) or add; for
 * a scalar or an optional value (min 0, max 1), the new value.
 */
export function applyDiff(old: Datum | undefined, diff: Datum, type: ColumnType): Datum {
  if (isMapType(type)) {
    const out = new Map(old instanceof Map ? old : []);
    for (const [k, v] of diff as Map<Atom, Atom>) {
      const cur = out.get(k);
      if (cur !== undefined && atomEquals(cur, v)) out.delete(k);
      else out.set(k, v);
    }
    return out;
  }
  // An optional value (a set of at most one) is sent whole, as ovsdb-server's diff does for it.
  if (isSetType(type) && type.max !== 1) {
    const out = Array.isArray(old) ? [...old] : old === undefined ? [] : [old as Atom];
    for (const x of Array.isArray(diff) ? diff : [diff as Atom]) {
      const i = out.findIndex((y) => atomEquals(x, y));
      if (i >= 0) out.splice(i, 1);
      else out.push(x);
    }
    return out;
  }
  return isSetType(type) && !Array.isArray(diff) ? [diff as Atom] : diff;
}

/** String maps (external_ids, options) as records, the form the provider reads. */
export function mapToRecord(d: Datum | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (d instanceof Map) for (const [k, v] of d) out[String(k)] = v instanceof Uuid ? v.uuid : String(v);
  return out;
}

function isPlainObject(x: unknown): x is Record<string, Atom> {
  if (typeof x !== 'object' || x === null) return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}
