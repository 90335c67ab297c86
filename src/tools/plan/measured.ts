/**
 * What the capacity plan takes as measured, never assumed: how long creates and failovers took here (from the
 * jobs' own traces), and what a running amphora of the process drivers holds (its processes' proportional
 * memory, its directory on disk).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { groupMembers, type GroupRecord } from '../../compute/process-group.js';
import { AMPHORA_FILES } from '../../compute/process-compute.js';
import type { Db } from '../../db/database.js';
import { amphoraProfile } from '../../providers/amphora/capabilities.js';
import type { AmphoraFootprint, MeasuredOperation, MeasuredTime } from './result.js';



const OPERATIONS: Record<string, MeasuredOperation> = { 'loadbalancer.create': 'create', 'loadbalancer.failover': 'failover', 'amphora.failover': 'failover' };

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Trace timestamps are UTC without a zone; a job's creation stamp carries a sequence number after the milliseconds. */
const epochMs = (stamp: string) => Date.parse(`${stamp.slice(0, 23)}Z`);

/**
 * Each finished create and failover, from its enqueueing (the request, or the health manager's decision) to
 * the end of its last step, per provider and topology, of the load balancers that still exist (a deleted one's
 * flavor is gone with it).
 */
export async function measuredTimes(db: Db): Promise<MeasuredTime[]> {
  const rows = await db.kysely
    .selectFrom('job as j')
    .innerJoin('job_step as s', 's.job_id', 'j.id')
    .innerJoin('load_balancer as lb', 'lb.id', 'j.load_balancer_id')
    .leftJoin('flavor', 'flavor.id', 'lb.flavor_id')
    .leftJoin('flavor_profile as fp', 'fp.id', 'flavor.flavor_profile_id')
    .select(['j.id', 'j.provider', 'j.operation', 'j.created_at', 'fp.flavor_data'])
    .select((eb) => eb.fn.max('s.finished_at').as('finished_at'))
    .where('j.state', '=', 'done')
    .where('j.operation', 'in', Object.keys(OPERATIONS))
    .groupBy(['j.id', 'j.provider', 'j.operation', 'j.created_at', 'fp.flavor_data'])
    .execute();
  const groups = new Map<string, { key: Omit<MeasuredTime, 'count' | 'medianSeconds' | 'maxSeconds'>; seconds: number[] }>();
  for (const row of rows) {
    if (!row.finished_at) continue;
    const topology = row.provider === 'amphora' ? amphoraProfile(row.flavor_data).topology : null;
    const operation = OPERATIONS[row.operation]!;
    const id = `${row.provider}/${topology}/${operation}`;
    const group = groups.get(id) ?? { key: { provider: row.provider, topology, operation }, seconds: [] };
    group.seconds.push(Math.max(0, epochMs(String(row.finished_at)) - epochMs(row.created_at)) / 1000);
    groups.set(id, group);
  }
  return [...groups.values()]
    .map(({ key, seconds }) => ({ ...key, count: seconds.length, medianSeconds: round(median(seconds)), maxSeconds: round(Math.max(...seconds)) }))
    .sort((a, b) => `${a.provider}/${a.topology}/${a.operation}`.localeCompare(`${b.provider}/${b.topology}/${b.operation}`));
}

const round = (seconds: number) => Math.round(seconds * 1000) / 1000;


/** The running amphorae of the process drivers under `rootDir` (DATA_DIR/amphorae), measured from /proc and the disk. */
export async function measureAmphorae(db: Db, rootDir: string): Promise<AmphoraFootprint> {
  const ids = (await db.kysely.selectFrom('amphora').select('id').where('status', '!=', 'DELETED').where('compute_id', 'is not', null).execute()).map((r) => r.id);
  const memory: number[] = [];
  const disk: number[] = [];
  for (const id of ids) {
    const dir = join(rootDir, id);
    const pids = groupMembers(recordIn(dir) ?? { pid: 0, startTime: null });
    if (!pids.length) continue;
    memory.push(sum(pids.map(pssKiB)) / 1024);
    disk.push(directoryBytes(dir) / 2 ** 20);
  }
  const mid = (values: number[]) => (values.length ? Math.round(median(values) * 10) / 10 : null);
  return { count: memory.length, memoryMiB: mid(memory), diskMiB: mid(disk) };
}

function recordIn(dir: string): GroupRecord | null {
  try {
    return JSON.parse(readFileSync(join(dir, AMPHORA_FILES.pid), 'utf8')) as GroupRecord;
  } catch {
    return null;
  }
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

/** Pss of /proc/<pid>/smaps_rollup, KiB: shared pages (HAProxy's and Node's code) counted in shares, as the machine holds them. */
function pssKiB(pid: number): number {
  try {
    return Number(/^Pss:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'))?.[1] ?? 0);
  } catch {
    return 0;
  }
}

function directoryBytes(dir: string): number {
  let bytes = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    try {
      bytes += statSync(join(entry.parentPath, entry.name)).size;
    } catch {
      // Removed while we walked: it takes no room any more.
    }
  }
  return bytes;
}
