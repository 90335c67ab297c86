/**
 * What the security areas compare around an attempt: every row a request could write, and the
 * shape of a refusal (Octavia's error body).
 */
import type { LightMyRequestResponse } from 'fastify';
import type { TableName } from '../../src/db/schema.js';
import type { Harness } from '../support/harness.js';

/** The tables of a load balancer's tree: all an object's own fields can reach. */
export const TREE_TABLES: readonly TableName[] = ['load_balancer', 'listener', 'pool', 'member', 'health_monitor', 'l7policy', 'l7rule', 'tag'];

const ALL_TABLES: readonly TableName[] = [
  'load_balancer', 'listener', 'pool', 'member', 'health_monitor', 'l7policy', 'l7rule', 'tag', 'quota', 'flavor', 'flavor_profile',
  'availability_zone', 'availability_zone_profile', 'amphora', 'port', 'key_manager_secret', 'key_manager_container', 'key_manager_acl',
  'key_manager_consumer', 'certificate_in_use',
];

/** Every row of `tables` (by default every table a request could touch), as one comparable value. */
export async function rowsSnapshot(h: Harness, tables: readonly TableName[] = ALL_TABLES): Promise<string> {
  await jobsIdle(h);
  const parts = await Promise.all(tables.map((t) => h.runtime.db.kysely.selectFrom(t).selectAll().execute()));
  return JSON.stringify(parts.map((rows) => rows.map((r) => JSON.stringify(r)).sort()));
}

/** Waits for the worker to finish what earlier requests queued: its writes are not the next attempt's. */
async function jobsIdle(h: Harness): Promise<void> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const busy = await h.runtime.db.kysely.selectFrom('job').select('id').where('state', 'in', ['queued', 'running']).executeTakeFirst();
    if (!busy) return;
    if (Date.now() > deadline) throw new Error(`job ${busy.id} still queued or running after 30 s`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** Why `res` is not a refusal with Octavia's body (faultcode, faultstring, debuginfo), or null. */
export function notOctaviaError(res: LightMyRequestResponse): string | null {
  let body: Record<string, unknown>;
  try {
    body = res.json();
  } catch {
    return `a non-JSON body ${JSON.stringify(res.body.slice(0, 120))}`;
  }
  const keys = Object.keys(body).sort().join(',');
  if (keys !== 'debuginfo,faultcode,faultstring') return `a body with keys ${keys}, not Octavia's`;
  if (typeof body.faultstring !== 'string' || body.faultstring === '') return 'an empty faultstring';
  return null;
}
