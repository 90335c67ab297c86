/**
 * `ostia migrate <load-balancer>`: moves a load balancer to another flavor or topology with its VIP
 * kept, through the API extension `PUT /v2/lbaas/loadbalancers/{id}/migrate`, which the openstack CLI
 * cannot send; with `--wait`, until it is ACTIVE again, by held GETs (`?wait=`), not by polling.
 */
import { isUuid } from '../domain/net.js';
import { Topology } from '../domain/enums.js';
import { apiLoginOptions, loginFromFlags, type Session } from './api-session.js';
import { CliError, formatTable, printJson, usageError, writeLine, type Command } from './command.js';
import { configFromFlags, dataDirOption } from './settings.js';

type Obj = Record<string, unknown>;

/** A held GET's longest wait (the API's maximum is higher; a shorter one shows progress sooner). */
const HOLD_SECONDS = 30;
const WAIT_BOUND_MS = 30 * 60_000;

export const migrate: Command = {
  name: 'migrate',
  summary: 'Move a load balancer to another flavor or topology, its VIP kept (the API extension PUT …/migrate).',
  positionals: ['load-balancer'],
  options: {
    ...dataDirOption,
    ...apiLoginOptions('ostia', ', the load balancer\'s owner or an admin'),
    flavor: { type: 'string', value: 'FLAVOR', help: "the flavor to move to, by id or name; 'none' for no flavor" },
    topology: { type: 'string', value: 'TOPOLOGY', help: `${Topology.join(' or ')}: the load balancer's own, over its flavor's` },
    provider: { type: 'string', value: 'PROVIDER', help: 'the provider to move to (moves between providers are checked, not built yet)' },
    wait: { type: 'boolean', help: 'wait until the load balancer is ACTIVE again, printing its status as it changes' },
  },
  details: [
    'LOAD-BALANCER is an id or a unique name. At least one of --flavor, --topology and --provider.',
    'The new amphorae are built and serve before the traffic moves to them; the old ones are then drained and removed.',
    'A move that fails leaves the load balancer serving as before, ACTIVE, with the reason in its status_reason:',
    'with --wait that is exit status 1 and the reason. Exit status: 0 moved (or accepted, without --wait), 1 refused or',
    'failed, 2 usage.',
  ].join('\n'),
  async run(input) {
    const v = input.values;
    const config = configFromFlags(migrate, input);
    const text = (name: string) => (typeof v[name] === 'string' ? (v[name] as string) : undefined);
    const topology = text('topology');
    if (topology !== undefined && !(Topology as readonly string[]).includes(topology)) throw usageError(migrate, `--topology must be ${Topology.join(' or ')}, got '${topology}'`);
    if (text('flavor') === undefined && topology === undefined && text('provider') === undefined) throw usageError(migrate, 'name at least one of --flavor, --topology and --provider');
    const session = await loginFromFlags(v, config.dataDir, 'ostia');
    const lb = await loadBalancer(session, input.positionals[0]!);
    const flavor = text('flavor');
    const migration = { ...(flavor !== undefined && { flavor_id: await flavorId(session, flavor) }), ...(topology && { topology }), ...(text('provider') && { provider: text('provider') }) };
    const reply = await session.request('PUT', `/v2/lbaas/loadbalancers/${String(lb.id)}/migrate`, { migration });
    if (reply.status !== 202) throw new CliError(`the move of load balancer ${String(lb.id)} was refused (HTTP ${reply.status}): ${faultOf(reply.text)}`, 'Change what the message names, then run it again.');
    let shown = (JSON.parse(reply.text) as { loadbalancer: Obj }).loadbalancer;
    if (v.wait) shown = await untilSettled(session, String(lb.id), input.json);
    if (input.json) printJson({ loadbalancer: shown, migration });
    else process.stdout.write(formatTable([['ID', 'NAME', 'PROVISIONING STATUS', 'FLAVOR', 'VIP'], [String(shown.id), String(shown.name ?? ''), String(shown.provisioning_status), String(shown.flavor_id ?? 'none'), String(shown.vip_address)]]));
    if (v.wait && shown.status_reason) throw new CliError(`load balancer ${String(lb.id)} did not move: ${String(shown.status_reason)}`, 'It serves as before; see its trace (ostia trace) for the step that failed.');
    return 0;
  },
};

function faultOf(text: string): string {
  try {
    return String((JSON.parse(text) as { faultstring?: unknown }).faultstring ?? text);
  } catch {
    return text.slice(0, 300);
  }
}

/** By id, or by a name unique among the load balancers the cloud sees. */
async function loadBalancer(session: Session, arg: string): Promise<Obj> {
  if (isUuid(arg)) {
    const r = await session.request('GET', `/v2/lbaas/loadbalancers/${arg}`);
    if (r.status === 200) return (JSON.parse(r.text) as { loadbalancer: Obj }).loadbalancer;
  }
  const found = (await session.json<{ loadbalancers: Obj[] }>('GET', `/v2/lbaas/loadbalancers?name=${encodeURIComponent(arg)}`)).loadbalancers;
  if (found.length === 1) return found[0]!;
  if (!found.length) throw new CliError(`no load balancer with the id or name '${arg}' that cloud can see`, 'Check it with openstack loadbalancer list, and --os-cloud.');
  throw new CliError(`${found.length} load balancers are named '${arg}': ${found.map((l) => String(l.id)).join(', ')}`, 'Pass the id of the one you mean.');
}

async function flavorId(session: Session, arg: string): Promise<string | null> {
  if (arg === 'none') return null;
  if (isUuid(arg)) return arg;
  const found = (await session.json<{ flavors: Obj[] }>('GET', `/v2/lbaas/flavors?name=${encodeURIComponent(arg)}`)).flavors;
  if (found.length !== 1) throw new CliError(`${found.length ? `${found.length} flavors are` : 'no flavor is'} named '${arg}'`, 'Check it with openstack loadbalancer flavor list, or pass its id.');
  return String(found[0]!.id);
}

/** Held GETs until the load balancer leaves PENDING_*; each status change on stderr. */
async function untilSettled(session: Session, id: string, quiet: boolean): Promise<Obj> {
  const deadline = Date.now() + WAIT_BOUND_MS;
  let last = '';
  for (;;) {
    const { loadbalancer } = await session.json<{ loadbalancer: Obj }>('GET', `/v2/lbaas/loadbalancers/${id}?wait=${HOLD_SECONDS}`);
    const status = String(loadbalancer.provisioning_status);
    if (status !== last && !quiet) writeLine(process.stderr, `ostia migrate: load balancer ${id} is ${status}`);
    last = status;
    if (!status.startsWith('PENDING_')) return loadbalancer;
    if (Date.now() > deadline) throw new CliError(`load balancer ${id} is still ${status} after ${WAIT_BOUND_MS / 60_000} minutes`, 'See its trace (ostia trace) for the step it is in.');
  }
}
