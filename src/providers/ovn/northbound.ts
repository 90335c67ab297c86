/**
 * The provider's Northbound connection: a monitor keeps a copy of the tables it reads, and each
 * change of a load balancer is one transaction that turns what is there into what should be
 * there (desired.ts). The transaction starts with a `wait` on the load balancer's rows as we
 * read them, so two writers (a flow and a reconciliation) never overwrite each other with stale
 * state: the second one's transaction fails, and it re-reads and retries.
 */
import { once } from 'node:events';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Config } from '../../config.js';
import {
  assertHealthChecksSupported, datumEquals, HealthCheckUnsupportedError, mapToRecord, NamedUuid, OvsdbOperationError, Uuid,
  type Atom, type Datum, type Monitor, type Operation, type OvsdbClient, type OvsdbClientOptions, type Row, type RowInput,
} from '../../ovn/ovsdb/index.js';
import { connectNorthbound, NB_DB } from '../../ovn/connection.js';
import { OWNER, OWNER_KEY, type Desired, type DesiredPort, type DesiredRow } from './desired.js';
import { NB_TABLES, Topology, uuidSet, type Named } from './topology.js';

/** The health-check columns and table, absent from Northbound schemas before OVN 2.12. */
const HEALTH_COLUMNS = ['health_check', 'ip_port_mappings'];

/** What to monitor: everything the provider reads, less the health checks a schema may lack. */
function monitoredTables(healthChecks: boolean): Record<string, { columns: string[] }> {
  if (healthChecks) return NB_TABLES;
  const { Load_Balancer_Health_Check: _checks, ...rest } = NB_TABLES;
  return { ...rest, Load_Balancer: { columns: NB_TABLES.Load_Balancer.columns.filter((c) => !HEALTH_COLUMNS.includes(c)) } };
}
/** Attempts of one change when another writer got there first. */
const MAX_ATTEMPTS = 8;

export interface SyncOutcome {
  /** Operations sent (0 when the database already held the desired state). */
  operations: number;
  /** Time spent in the NB transaction, ms. */
  transactMs: number;
  attempts: number;
  /** Health-check source addresses the rows used before the change and no longer use. */
  releasedSources: string[];
}

const asMap = (rec: Record<string, string>) => new Map<Atom, Atom>(Object.entries(rec));
const uuidsIn = (d: Datum | undefined): string[] => (Array.isArray(d) ? d.filter((a): a is Uuid => a instanceof Uuid).map((a) => a.uuid) : []);
const byUuid = (uuid: string): ['_uuid', '==', Uuid] => ['_uuid', '==', new Uuid(uuid)];

/** The health-check source addresses in `ip_port_mappings` values (`<port>:<source>`, IPv6 in brackets). */
function sourcesOf(mappings: ReadonlyArray<Record<string, string>>): Set<string> {
  return new Set(mappings.flatMap((m) => Object.values(m)).map((v) => v.slice(v.indexOf(':') + 1).replace(/^\[(.*)\]$/, '$1')));
}

interface Planned {
  ops: Operation[];
  releasedSources: string[];
}

/** What rows as read used that the desired rows (if any) do not. */
function released(current: ReadonlyArray<{ row: Row }>, desired?: Desired): string[] {
  const before = sourcesOf(current.map(({ row }) => mapToRecord(row.ip_port_mappings)));
  const after = sourcesOf(desired?.rows.map((r) => r.ipPortMappings) ?? []);
  return [...before].filter((ip) => !after.has(ip));
}

/** A write lost to a concurrent writer (our `wait` failed) or a name taken meanwhile: re-read and retry. */
function isRace(e: unknown): boolean {
  return e instanceof OvsdbOperationError && (e.error === 'timed out' || e.error === 'constraint violation');
}

export class Northbound {
  readonly topology: Topology;
  /** The Load_Balancer columns this database has and the provider writes. */
  private readonly lbColumns: string[];
  /** Transactions this connection committed and the time they took (for the bench and logs). */
  readonly stats = { transactions: 0, transactMs: 0, retries: 0 };
  /** Load_Balancer row uuids by name: a load balancer's rows without scanning the table. */
  private readonly byName = new Map<string, Set<string>>();

  private constructor(
    readonly client: OvsdbClient,
    readonly monitor: Monitor,
    /** False when the schema has no health checks (OVN < 2.12): monitors are refused. */
    readonly healthChecks: boolean,
    private readonly log: Logger | undefined,
  ) {
    this.topology = new Topology(monitor);
    this.lbColumns = monitoredTables(healthChecks).Load_Balancer!.columns;
    for (const [uuid, row] of monitor.tables.get('Load_Balancer') ?? []) this.index(uuid, undefined, row);
    monitor.on('change', (c: { table: string; uuid: string; row?: Row; old?: Row }) => {
      if (c.table === 'Load_Balancer') this.index(c.uuid, c.old, c.row);
    });
  }

  static async open(ovn: Config['ovn'], log?: Logger, options: Partial<OvsdbClientOptions> = {}): Promise<Northbound> {
    const client = await connectNorthbound(ovn, log, options);
    try {
      const schema = await client.getSchema(NB_DB);
      let healthChecks = true;
      try {
        assertHealthChecksSupported(schema);
      } catch (e) {
        if (!(e instanceof HealthCheckUnsupportedError)) throw e;
        healthChecks = false;
      }
      const monitor = await client.monitor(NB_DB, monitoredTables(healthChecks));
      return new Northbound(client, monitor, healthChecks, log);
    } catch (e) {
      client.close();
      throw e;
    }
  }

  close(): void {
    this.client.close();
  }

  private index(uuid: string, old: Row | undefined, row: Row | undefined): void {
    if (old) this.byName.get(String(old.name))?.delete(uuid);
    if (row) {
      const name = String(row.name);
      this.byName.set(name, (this.byName.get(name) ?? new Set()).add(uuid));
    }
  }

  /** The load balancer rows named `name`, as the monitor has them. */
  rowsNamed(name: string): Array<{ uuid: string; row: Row }> {
    const table = this.monitor.tables.get('Load_Balancer')!;
    return [...(this.byName.get(name) ?? [])].flatMap((uuid) => {
      const row = table.get(uuid);
      return row ? [{ uuid, row }] : [];
    });
  }

  /** Names of the load balancer rows Ostia wrote (reconciliation's view of what it owns). */
  ownedNames(): Set<string> {
    const out = new Set<string>();
    for (const row of this.monitor.tables.get('Load_Balancer')!.values()) if (mapToRecord(row.external_ids)[OWNER_KEY] === OWNER) out.add(String(row.name));
    return out;
  }

  /**
   * Makes the database hold `desired(current)` for load balancer `name`. `desired` is called again
   * on every attempt, with the rows as read for it: it reads the topology and Ostia's database after
   * them (or knows its reading is newer than them). `verify` also checks what a change takes on
   * trust (attachments), for reconciliation.
   */
  async sync(name: string, desired: (current: ReadonlyArray<{ uuid: string; row: Row }>) => Promise<Desired>, verify = false): Promise<SyncOutcome> {
    return this.retrying(async () => {
      const current = this.rowsNamed(name);
      const wanted = await desired(current);
      return { ops: this.plan(name, current, wanted, verify), releasedSources: released(current, wanted) };
    });
  }

  /** Removes load balancer `name`: its rows (switches and routers drop their weak references) and its VIP ports. */
  async remove(name: string, vipPortNames: readonly string[]): Promise<SyncOutcome> {
    return this.retrying(async () => {
      const current = this.rowsNamed(name);
      const ops: Operation[] = [this.waitFor(name, current)];
      for (const { uuid } of current) ops.push({ op: 'delete', table: 'Load_Balancer', where: [byUuid(uuid)] });
      ops.push(...this.detachPorts(vipPortNames));
      return { ops, releasedSources: released(current) };
    });
  }

  /**
   * Resolves once every chassis runs what the database holds now (ovn-nbctl's `--wait=hv`): NB_Global's
   * nb_cfg goes up by one and the transaction waits, in ovsdb-server, until hv_cfg has caught up.
   * A move hands a VIP over only then: before it, some chassis may not serve the rows just written.
   */
  async appliedEverywhere(timeoutMs: number): Promise<void> {
    const [, read] = await this.client.transact(NB_DB, [
      { op: 'mutate', table: 'NB_Global', where: [], mutations: [['nb_cfg', '+=', 1]] },
      { op: 'select', table: 'NB_Global', where: [], columns: ['nb_cfg'] },
    ]);
    const target = read?.op === 'select' ? Number(read.rows[0]?.nb_cfg) : NaN;
    if (!Number.isFinite(target)) throw new Error('the Northbound database has no NB_Global row: is ovn-northd running against it?');
    const deadline = Date.now() + timeoutMs;
    // A wait that times out in the server fails the transaction; each round waits for the next change of hv_cfg.
    for (;;) {
      const [now] = await this.client.transact(NB_DB, [{ op: 'select', table: 'NB_Global', where: [], columns: ['hv_cfg'] }]);
      const hv = now?.op === 'select' ? Number(now.rows[0]?.hv_cfg) : NaN;
      if (hv >= target) return;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`the chassis have not applied the Northbound change (nb_cfg ${target}, hv_cfg ${hv}) within ${timeoutMs / 1000} s: is ovn-controller running on every chassis? See \`ovn-sbctl show\``);
      await this.client
        .transact(NB_DB, [{ op: 'wait', table: 'NB_Global', where: [], columns: ['hv_cfg'], until: '!=', rows: [{ hv_cfg: hv }], timeoutMs: Math.min(left, 5_000) }])
        .catch(() => undefined);
    }
  }

  /** Removes switch ports by name (a health-check source port no member needs any more). */
  async removePorts(names: readonly string[]): Promise<SyncOutcome> {
    return this.retrying(async () => ({ ops: this.detachPorts(names), releasedSources: [] }));
  }

  private detachPorts(names: readonly string[]): Operation[] {
    const ops: Operation[] = [];
    for (const name of names) {
      const port = this.topology.portNamed(name);
      const ls = port && this.topology.switchOfPort(port.uuid);
      if (port && ls) ops.push({ op: 'mutate', table: 'Logical_Switch', where: [byUuid(ls.uuid)], mutations: [['ports', 'delete', [new Uuid(port.uuid)]]] });
    }
    return ops;
  }

  private async retrying(plan: () => Promise<Planned>): Promise<SyncOutcome> {
    for (let attempt = 1; ; attempt++) {
      const { ops, releasedSources } = await plan();
      const writes = ops.filter((o) => o.op !== 'wait').length;
      if (!writes) return { operations: 0, transactMs: 0, attempts: attempt, releasedSources };
      const started = performance.now();
      try {
        await this.client.transact(NB_DB, ops);
        const transactMs = performance.now() - started;
        this.stats.transactions++;
        this.stats.transactMs += transactMs;
        return { operations: ops.length, transactMs, attempts: attempt, releasedSources };
      } catch (e) {
        if (!isRace(e) || attempt >= MAX_ATTEMPTS) throw e;
        this.stats.retries++;
        this.log?.debug({ attempt, err: (e as Error).message }, 'northbound changed under us; re-reading');
        // Another writer's change is on its way to our monitor: wait for it (or a moment) before re-reading.
        const round = new AbortController();
        await Promise.race([once(this.monitor, 'change', { signal: round.signal }), sleep(20 * attempt, undefined, { signal: round.signal })]).catch(() => undefined);
        round.abort();
      }
    }
  }

  /** The rows named `name` must still be exactly as we read them. */
  private waitFor(name: string, current: ReadonlyArray<{ row: Row }>): Operation {
    return {
      op: 'wait',
      table: 'Load_Balancer',
      where: [['name', '==', name]],
      columns: this.lbColumns,
      until: '==',
      rows: current.map(({ row }) => Object.fromEntries(this.lbColumns.map((c) => [c, row[c]!]))),
      timeoutMs: 0,
    };
  }

  private plan(name: string, current: ReadonlyArray<{ uuid: string; row: Row }>, desired: Desired, verify: boolean): Operation[] {
    const ops: Operation[] = [this.waitFor(name, current)];
    if (!this.healthChecks && desired.rows.some((d) => d.checks.length)) throw new HealthCheckUnsupportedError();
    const checks = this.monitor.tables.get('Load_Balancer_Health_Check') ?? new Map<string, Row>();
    const refs: Atom[] = [];
    const kept = new Set<string>();
    desired.rows.forEach((d, i) => {
      const protocol = d.protocol === null ? [] : [d.protocol];
      const cur = current.find(({ row, uuid }) => !kept.has(uuid) && datumEquals(row.protocol as Datum, protocol));
      const healthCheck = this.planChecks(d, cur ? uuidsIn(cur.row.health_check) : [], checks, `hc${i}_`, ops);
      const row: Row = {
        name,
        protocol,
        vips: asMap(d.vips),
        selection_fields: d.selectionFields,
        options: asMap(d.options),
        external_ids: asMap(d.externalIds),
        ...(this.healthChecks && { health_check: healthCheck, ip_port_mappings: asMap(d.ipPortMappings) }),
      };
      if (cur) {
        kept.add(cur.uuid);
        refs.push(new Uuid(cur.uuid));
        if (!this.lbColumns.every((c) => datumEquals(cur.row[c] as Datum, row[c]!))) ops.push({ op: 'update', table: 'Load_Balancer', where: [byUuid(cur.uuid)], row: row as RowInput });
      } else {
        ops.push({ op: 'insert', table: 'Load_Balancer', row: row as RowInput, uuidName: `lb${i}` });
        refs.push(new NamedUuid(`lb${i}`));
      }
    });
    for (const { uuid } of current) if (!kept.has(uuid)) ops.push({ op: 'delete', table: 'Load_Balancer', where: [byUuid(uuid)] });
    this.planAttachments('Logical_Switch', desired.switches, refs, current, 'ls_refs', verify, ops);
    this.planAttachments('Logical_Router', desired.routers, refs, current, 'lr_ref', verify, ops);
    desired.ports.forEach((p, i) => this.planPort(p, `port${i}`, ops));
    return ops;
  }

  /** Reuses the health check rows already there (matched by pool and VIP), inserts the missing ones. */
  private planChecks(d: DesiredRow, existing: string[], rows: Map<string, Row>, prefix: string, ops: Operation[]): Atom[] {
    const out: Atom[] = [];
    const used = new Set<string>();
    d.checks.forEach((c, j) => {
      const row: Row = { vip: c.vip, options: asMap(c.options), external_ids: asMap(c.externalIds) };
      const match = existing.find((uuid) => {
        const ids = mapToRecord(rows.get(uuid)?.external_ids);
        return !used.has(uuid) && ids['octavia:pool_id'] === c.poolId && ids['octavia:vip'] === c.vipAddress;
      });
      if (match) {
        used.add(match);
        out.push(new Uuid(match));
        const cur = rows.get(match)!;
        if (!(['vip', 'options', 'external_ids'] as const).every((k) => datumEquals(cur[k] as Datum, row[k]!)))
          ops.push({ op: 'update', table: 'Load_Balancer_Health_Check', where: [byUuid(match)], row: row as RowInput });
      } else {
        ops.push({ op: 'insert', table: 'Load_Balancer_Health_Check', row: row as RowInput, uuidName: `${prefix}${j}` });
        out.push(new NamedUuid(`${prefix}${j}`));
      }
    });
    return out;
  }

  /**
   * Attaches the rows to the switches (routers) they belong on, and detaches them from those
   * the previous state named (`ls_refs`/`lr_ref`) that they no longer belong on. A row already
   * there and a holder the previous state named are taken as attached (the holder's set grows
   * with every load balancer, so it is not searched on every change) unless `verify` asks for
   * the check, as reconciliation does.
   */
  private planAttachments(table: 'Logical_Switch' | 'Logical_Router', wanted: readonly Named[], refs: Atom[], current: ReadonlyArray<{ uuid: string; row: Row }>, key: string, verify: boolean, ops: Operation[]): void {
    const rows = this.monitor.tables.get(table)!;
    const keptUuids = refs.filter((r): r is Uuid => r instanceof Uuid).map((r) => r.uuid);
    const previous = new Set<string>();
    for (const { row } of current) {
      const value = mapToRecord(row.external_ids)[key];
      if (!value) continue;
      for (const n of key === 'ls_refs' ? Object.keys(JSON.parse(value) as Record<string, number>) : value.split(',')) previous.add(n);
    }
    for (const holder of wanted) {
      const row = rows.get(holder.uuid);
      const attached = verify ? row !== undefined && keptUuids.every((u) => uuidSet(row, 'load_balancer').has(u)) : previous.has(holder.name);
      if (attached && refs.every((r) => r instanceof Uuid)) continue;
      ops.push({ op: 'mutate', table, where: [byUuid(holder.uuid)], mutations: [['load_balancer', 'insert', refs]] });
    }
    const wantedNames = new Set(wanted.map((h) => h.name));
    if (!keptUuids.length) return;
    for (const [uuid, holder] of rows) {
      const holderName = String(holder.name);
      if (previous.has(holderName) && !wantedNames.has(holderName))
        ops.push({ op: 'mutate', table, where: [byUuid(uuid)], mutations: [['load_balancer', 'delete', keptUuids.map((u) => new Uuid(u))]] });
    }
  }

  /** Creates (or corrects) a switch port Ostia owns. */
  private planPort(p: DesiredPort, uuidName: string, ops: Operation[]): void {
    const row: Row = { name: p.name, type: p.type, addresses: p.addresses, external_ids: asMap(p.externalIds) };
    const existing = this.topology.portNamed(p.name);
    if (!existing) {
      ops.push({ op: 'insert', table: 'Logical_Switch_Port', row: row as RowInput, uuidName });
      ops.push({ op: 'mutate', table: 'Logical_Switch', where: [byUuid(p.switch.uuid)], mutations: [['ports', 'insert', [new NamedUuid(uuidName)]]] });
      return;
    }
    if (!(['type', 'addresses', 'external_ids'] as const).every((k) => datumEquals(existing.row[k] as Datum, row[k]!)))
      ops.push({ op: 'update', table: 'Logical_Switch_Port', where: [byUuid(existing.uuid)], row: row as RowInput });
  }
}
