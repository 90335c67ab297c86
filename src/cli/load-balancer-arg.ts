/**
 * The load balancer an `ostia` command is given, by id or by name, as the openstack CLI takes it:
 * an id first, then a name, which must be unique across projects (the operator sees them all).
 */
import type { Db } from '../db/database.js';
import { CliError } from './command.js';

export interface ResolvedLoadBalancer {
  id: string;
  name: string | null;
  provisioning_status: string;
  /** How the argument matched. */
  by: 'id' | 'name';
}

/** The row named by `arg`, or null when no row has it as its id and no name matches (a deleted id may still have a trace). */
export async function resolveLoadBalancer(db: Db, arg: string): Promise<ResolvedLoadBalancer | null> {
  const columns = ['id', 'name', 'provisioning_status', 'project_id'] as const;
  const rows = await db.kysely.selectFrom('load_balancer').select(columns).where((eb) => eb.or([eb('id', '=', arg), eb('name', '=', arg)])).execute();
  const byId = rows.find((r) => r.id === arg);
  if (byId) return { id: byId.id, name: byId.name, provisioning_status: byId.provisioning_status, by: 'id' };
  if (rows.length > 1)
    throw new CliError(
      `${rows.length} load balancers are named '${arg}': ${rows.map((r) => `${r.id} (project ${r.project_id})`).join(', ')}`,
      'Pass the id of the one you mean.',
    );
  const [byName] = rows;
  return byName ? { id: byName.id, name: byName.name, provisioning_status: byName.provisioning_status, by: 'name' } : null;
}
