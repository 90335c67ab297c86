/**
 * The steps amphora flows are made of. Each is idempotent, because a job resumes at the step
 * its worker died in: state lives in the amphora row, never in memory, and every external
 * action is asked "already done?" first. The amphora a create or failover job builds has an
 * id derived from the job, or is a spare it adopted, and its row names the job either way, so a
 * resumed job finds the amphora it started instead of making a second one.
 */
import { loadBalancerCodec } from '../../db/records/load-balancer.js';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { nameBasedUuid } from '../../domain/ids.js';
import type { ExpressionBuilder, Kysely, Transaction } from 'kysely';
import type { Step, StepContext } from '../../provider-contract/flow.js';
import type { Database } from '../../db/schema.js';
import { newAmphoraRow, type AmphoraRow } from '../../db/records/amphora.js';
import { timestamp } from '../../domain/time.js';
import { buildAmphoraConfig } from './config-builder.js';
import type { AmphoraConfig, VrrpConfig } from '../../domain/amphora-config.js';
import { ipVersion } from '../../domain/net.js';
import type { SecurityGroup } from '../../network/network-driver.js';
import type { AgentApi, AmphoraDeps, AmphoraDepsLoader } from './deps.js';
import { ACTIVE_STANDBY_REFUSAL, amphoraProfile } from './capabilities.js';
import { settleAmphoraTree } from './statuses.js';
import { heartbeatKey } from './heartbeat-key.js';
import { forgetFailovers } from '../../db/failover-memory.js';
import { adoptSpare } from './spare-adoption.js';
import { recordMigration } from '../migration-record.js';

type Q = Kysely<Database> | Transaction<Database>;

/**
 * A name-based UUID (version 5 layout) of the job: the same job always builds the same amphorae.
 * `index` tells apart the two an ACTIVE_STANDBY build makes; the first keeps the single id of old.
 */
export function jobAmphoraId(jobId: string, index = 0): string {
  return nameBasedUuid(`ostia:amphora:${jobId}${index ? `:${index}` : ''}`);
}

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/** Waits for every one, then fails with the first failure: a revert must not run beside work still under way. */
async function allSettled(work: Array<Promise<void>>): Promise<void> {
  const failed = (await Promise.allSettled(work)).find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

export async function findAmphora(db: Q, id: string): Promise<AmphoraRow | undefined> {
  return db.selectFrom('amphora').selectAll().where('id', '=', id).executeTakeFirst();
}

/**
 * A job builds in one or two rounds. Round 0 builds the amphora (or the MASTER and BACKUP) of a create or
 * failover; round 1 exists only in the load balancer failover of a pair, which replaces the standby in
 * round 0 and the active in round 1, so one amphora of the pair serves throughout (as Octavia's flow does).
 */
export type Round = 0 | 1;
const ROUND_INDEXES: Record<Round, number[]> = { 0: [0, 1], 1: [2] };

/**
 * The amphorae the job built or adopted in the rounds asked: the row names the job and slot; a row
 * written before rows did is found by the id derived from the job.
 */
function builtBy(jobId: string, rounds: readonly Round[] = [0, 1]) {
  const slots = rounds.flatMap((r) => ROUND_INDEXES[r]);
  return (eb: ExpressionBuilder<Database, 'amphora'>) =>
    eb.or([eb('amphora.id', 'in', slots.map((i) => jobAmphoraId(jobId, i))), eb.and([eb('amphora.job_id', '=', jobId), eb('amphora.job_slot', 'in', slots)])]);
}

/** What the job builds (in the rounds asked), created by create-amphora; [] before that, or when it was never created. */
export async function findBuiltAmphorae(db: Q, jobId: string, rounds?: readonly Round[]): Promise<AmphoraRow[]> {
  return db.selectFrom('amphora').selectAll().where(builtBy(jobId, rounds)).orderBy('role').execute();
}

/** The amphorae the round builds; round 1 may rightly build none (see roundPlan). */
export async function builtAmphorae(ctx: StepContext, round: Round = 0): Promise<AmphoraRow[]> {
  const amphorae = await findBuiltAmphorae(ctx.db.kysely, ctx.jobId, [round]);
  if (!amphorae.length && round === 0) throw new Error(`amphora ${jobAmphoraId(ctx.jobId)} of this job is missing from the database`);
  return amphorae;
}

/** The job's amphorae not yet in service: what a failure may take down (a round that finished serves). */
export async function unfinishedBuilt(db: Q, jobId: string, rounds?: readonly Round[]): Promise<AmphoraRow[]> {
  return (await findBuiltAmphorae(db, jobId, rounds)).filter((a) => a.status !== 'ALLOCATED');
}

export async function updateAmphora(db: Q, id: string, values: Partial<Omit<AmphoraRow, 'id'>>): Promise<void> {
  await db.updateTable('amphora').set({ ...values, updated_at: timestamp() }).where('id', '=', id).execute();
}

async function withAgent<T>(deps: AmphoraDeps, amp: AmphoraRow, use: (client: AgentApi) => Promise<T>): Promise<T> {
  if (!amp.agent_url) throw new Error(`amphora ${amp.id} has no agent URL`);
  const client = await deps.agent({ id: amp.id, agentUrl: amp.agent_url });
  try {
    return await use(client);
  } finally {
    client.close();
  }
}

/** Every compute of the amphora: the recorded one, and one an attempt started but died before recording. */
export async function destroyCompute(deps: AmphoraDeps, amp: AmphoraRow): Promise<void> {
  const ids = new Set((await deps.compute.list()).filter((c) => c.amphoraId === amp.id).map((c) => c.computeId));
  if (amp.compute_id) ids.add(amp.compute_id);
  for (const id of ids) await deps.compute.delete(id);
}

export async function vipsOf(db: Q, lbId: string): Promise<{ portId: string | null; subnetId: string | null; addresses: string[]; securityGroups: string[] }> {
  const lb = await db.selectFrom('load_balancer').select(['vip_address', 'vip_port_id', 'vip_subnet_id', 'additional_vips', 'vip_sg_ids']).where('id', '=', lbId).executeTakeFirstOrThrow();
  const { additional_vips, vip_sg_ids } = loadBalancerCodec.decode(lb);
  return { portId: lb.vip_port_id, subnetId: lb.vip_subnet_id, addresses: [...(lb.vip_address ? [lb.vip_address] : []), ...additional_vips.map((v) => v.ip_address)], securityGroups: vip_sg_ids };
}

interface AmphoraPlacement {
  computeFlavor: string | null;
  zone: string | null;
  topology: 'SINGLE' | 'ACTIVE_STANDBY';
}

/**
 * The load balancer's flavor and availability zone: its topology, and a compute flavor and zone recorded,
 * not acted on. A migration builds for the placement it moves to.
 */
async function placementOf(ctx: Pick<StepContext, 'db' | 'loadBalancerId' | 'payload'>): Promise<AmphoraPlacement> {
  const db = ctx.db.kysely;
  const lb = await db.selectFrom('load_balancer').select(['flavor_id', 'topology', 'availability_zone']).where('id', '=', ctx.loadBalancerId).executeTakeFirstOrThrow();
  const { flavor_id, topology } = ctx.payload.migration?.to ?? lb;
  const flavor = flavor_id
    ? await db.selectFrom('flavor').innerJoin('flavor_profile', 'flavor_profile.id', 'flavor.flavor_profile_id').select('flavor_profile.flavor_data').where('flavor.id', '=', flavor_id).executeTakeFirst()
    : undefined;
  const zone = lb.availability_zone
    ? await db
        .selectFrom('availability_zone as az')
        .innerJoin('availability_zone_profile as azp', 'azp.id', 'az.availability_zone_profile_id')
        .select('azp.availability_zone_data')
        .where('az.name', '=', lb.availability_zone)
        .executeTakeFirst()
    : undefined;
  const zoneData = JSON.parse(zone?.availability_zone_data ?? '{}') as { compute_zone?: string };
  return { ...amphoraProfile(flavor?.flavor_data ?? null, topology), zone: zoneData.compute_zone ?? null };
}

/**
 * Takes an amphora out of service for good: its processes, its VIPs, its management address.
 * The row stays, DELETED, as Octavia keeps it until housekeeping purges it.
 */
export async function retireAmphora(ctx: StepContext, deps: AmphoraDeps, amp: AmphoraRow): Promise<void> {
  await takeDown(ctx, deps, amp, 'DELETED');
}

/**
 * Stops the amphora's processes and frees its management address. A retired amphora also gives up
 * its VIPs; a failed build's VIPs are unplugged by plug-vip's own revert, which runs first.
 */
async function takeDown(ctx: StepContext, deps: AmphoraDeps, amp: AmphoraRow, status: 'DELETED' | 'ERROR'): Promise<void> {
  await destroyCompute(deps, amp);
  if (status === 'DELETED') await unplugVips(ctx, deps, amp);
  await deps.network.releaseManagementAddress(ctx.db.kysely, amp.id);
  await updateAmphora(ctx.db.kysely, amp.id, { status });
}

async function unplugVips(ctx: StepContext, deps: Pick<AmphoraDeps, 'network' | 'dataPlane'>, amp: AmphoraRow): Promise<void> {
  if (deps.dataPlane) await deps.network.unplugVip(ctx.db.kysely, amp.id);
}

type Role = AmphoraRow['role'];

/** Octavia's keepalived priorities (constants.ROLE_MASTER_PRIORITY, ROLE_BACKUP_PRIORITY); a STANDALONE amphora has none. */
const VRRP_PRIORITY: Record<string, number | null> = { MASTER: 100, BACKUP: 90, STANDALONE: null };
/** Octavia's DEFAULT_VRRP_ID, which its flows give every amphora, STANDALONE included. */
const VRRP_ID = 1;
const isVrrp = (role: Role) => role === 'MASTER' || role === 'BACKUP';
export const masterLast = (a: AmphoraRow, b: AmphoraRow) => Number(a.role === 'MASTER') - Number(b.role === 'MASTER');

/** The amphorae of the load balancer a failover may replace: those not built by this job and not gone. */
async function previousAmphorae(ctx: StepContext): Promise<AmphoraRow[]> {
  return ctx.db.kysely
    .selectFrom('amphora')
    .selectAll()
    .where('load_balancer_id', '=', ctx.loadBalancerId)
    .where('status', '!=', 'DELETED')
    .where((eb) => eb.not(builtBy(ctx.jobId)(eb)))
    .execute();
}

/** A pair whose halves both exist is failed over half by half; any other set is rebuilt whole. */
const halvesOf = (amphorae: readonly AmphoraRow[]) => ({ master: amphorae.filter((a) => a.role === 'MASTER'), others: amphorae.filter((a) => a.role !== 'MASTER') });
const standbyFirst = (topology: AmphoraPlacement['topology'], previous: readonly AmphoraRow[]) => {
  const { master, others } = halvesOf(previous);
  return topology === 'ACTIVE_STANDBY' && master.length === 1 && others.length > 0;
};

/**
 * What a round of this job builds, and which amphorae it replaces (retire-old-amphorae takes them out once
 * the round's amphorae serve). A half of a pair is rebuilt as BACKUP: its survivor holds the VIP (keepalived
 * never preempts), so the survivor becomes the MASTER. A create replaces nothing.
 */
async function roundPlan(ctx: StepContext, round: Round, topology: AmphoraPlacement['topology']): Promise<{ roles: Role[]; replaced: AmphoraRow[] }> {
  if (ctx.operation === 'loadbalancer.create') return { roles: round === 0 ? (topology === 'ACTIVE_STANDBY' ? ['MASTER', 'BACKUP'] : ['STANDALONE']) : [], replaced: [] };
  if (ctx.payload.amphora_id !== undefined) {
    if (round === 1) return { roles: [], replaced: [] };
    const named = await findAmphora(ctx.db.kysely, String(ctx.payload.amphora_id));
    return { roles: [isVrrp(named?.role ?? null) ? 'BACKUP' : (named?.role ?? 'STANDALONE')], replaced: named && named.status !== 'DELETED' ? [named] : [] };
  }
  const previous = await previousAmphorae(ctx);
  const { master, others } = halvesOf(previous);
  if (round === 0) {
    // Decided once: round 0's own amphora tells a resumed job which way it went.
    const built = await findBuiltAmphorae(ctx.db.kysely, ctx.jobId, [0]);
    const halves = built.length ? built.length === 1 && topology === 'ACTIVE_STANDBY' : standbyFirst(topology, previous);
    if (halves) return { roles: ['BACKUP'], replaced: others };
    return { roles: topology === 'ACTIVE_STANDBY' ? ['MASTER', 'BACKUP'] : ['STANDALONE'], replaced: previous };
  }
  const halves = topology === 'ACTIVE_STANDBY' && (await findBuiltAmphorae(ctx.db.kysely, ctx.jobId, [0])).length === 1;
  return halves ? { roles: ['BACKUP'], replaced: master } : { roles: [], replaced: [] };
}

/**
 * keepalived never preempts, so the BACKUP of a pair may be the one holding the VIPs (it won the first
 * election, or outlived a MASTER). A pair moved half by half replaces its BACKUP first: the roles are
 * made what the pair does before that, so the VIPs change hands once, in the last round, not twice.
 */
async function rolesAsServing(ctx: StepContext, deps: AmphoraDeps): Promise<void> {
  if (!deps.dataPlane) return;
  const pair = (await previousAmphorae(ctx)).filter((a) => a.status === 'ALLOCATED' && isVrrp(a.role));
  const backup = pair.find((a) => a.role === 'BACKUP');
  const master = pair.find((a) => a.role === 'MASTER');
  if (pair.length !== 2 || !backup || !master) return;
  const holds = await withAgent(deps, backup, (client) => client.info()).then((i) => i.vipHeld === true, () => false);
  if (!holds) return;
  await ctx.db.kysely.transaction().execute(async (trx) => {
    await updateAmphora(trx, backup.id, { role: 'MASTER', vrrp_priority: VRRP_PRIORITY.MASTER });
    await updateAmphora(trx, master.id, { role: 'BACKUP', vrrp_priority: VRRP_PRIORITY.BACKUP });
  });
}

/**
 * The amphora rows of this job, each with its role: a spare adopted (already running), or a new row with a
 * management address of its own, which boot-compute then starts.
 */
export function createAmphora(load: AmphoraDepsLoader, round: Round = 0): Step {
  return {
    name: 'create-amphora',
    async run(ctx) {
      if ((await findBuiltAmphorae(ctx.db.kysely, ctx.jobId, [round])).length) return;
      const deps = await load();
      const { network, settings, activeStandby } = deps;
      if (round === 0 && ctx.operation === 'loadbalancer.migrate') await rolesAsServing(ctx, deps);
      const placement = await placementOf(ctx);
      const { roles, replaced } = await roundPlan(ctx, round, placement.topology);
      if (!roles.length) return;
      // The flavor check refuses ACTIVE_STANDBY where it cannot be built; this holds when compute.driver changed since.
      if (!activeStandby && roles.some(isVrrp)) throw new Error(ACTIVE_STANDBY_REFUSAL);
      await ctx.db.kysely.transaction().execute(async (trx) => {
        if (replaced.length && roles.length === 1 && isVrrp(roles[0]!))
          await trx
            .updateTable('amphora')
            .set({ role: 'MASTER', vrrp_priority: VRRP_PRIORITY.MASTER, updated_at: timestamp() })
            .where('load_balancer_id', '=', ctx.loadBalancerId)
            .where('status', '=', 'ALLOCATED')
            .where('id', 'not in', replaced.map((a) => a.id))
            .execute();
        for (const [index, role] of roles.entries()) {
          const slot = ROUND_INDEXES[round][index]!;
          const given = {
            load_balancer_id: ctx.loadBalancerId,
            role,
            vrrp_id: VRRP_ID,
            vrrp_priority: VRRP_PRIORITY[role ?? 'STANDALONE'] ?? null,
            cached_zone: placement.zone,
            compute_flavor: placement.computeFlavor,
            job_id: ctx.jobId,
            job_slot: slot,
          };
          if (await adoptSpare(trx, given)) continue;
          const id = jobAmphoraId(ctx.jobId, slot);
          const address = await network.allocateManagementAddress(trx, id);
          await trx.insertInto('amphora').values(newAmphoraRow(id, address, settings.agentPort, { ...given, status: 'PENDING_CREATE' })).execute();
        }
      });
    },
    // Also destroys compute: a boot-compute that failed half-way is not reverted itself.
    async revert(ctx) {
      const deps = await load();
      for (const amp of await unfinishedBuilt(ctx.db.kysely, ctx.jobId, [round])) await takeDown(ctx, deps, amp, 'ERROR');
    },
  };
}

/** Starts the amphora's processes with a fresh server certificate, unless they already run. */
export function bootCompute(load: AmphoraDepsLoader, round: Round = 0): Step {
  return {
    name: 'boot-compute',
    async run(ctx) {
      const deps = await load();
      // The two of a pair at once: each its own namespace, directory and certificate.
      await allSettled((await builtAmphorae(ctx, round)).map((amp) => bootAmphora(ctx, deps, amp)));
    },
    async revert(ctx) {
      const deps = await load();
      for (const amp of await unfinishedBuilt(ctx.db.kysely, ctx.jobId, [round])) await destroyCompute(deps, amp);
    },
  };
}

/** What booting an amphora and waiting for its agent need of a step: a spare's boot has no job, and its heartbeat does nothing. */
export type BootContext = Pick<StepContext, 'db' | 'signal' | 'heartbeat'>;

/** Starts the amphora's processes with a fresh server certificate, unless they already run (a spare adopted, a resumed job). */
export async function bootAmphora(ctx: BootContext, deps: AmphoraDeps, amp: AmphoraRow): Promise<void> {
  if (amp.compute_id && (await deps.compute.status(amp.compute_id)) === 'running') return;
  // One an earlier attempt started without recording it holds a certificate we never stored.
  await destroyCompute(deps, amp);
  const cert = await deps.ca.issueAmphoraCert(amp.id, amp.lb_network_ip!, deps.settings.certValidityDays);
  const computeId = await deps.compute.boot(
    {
      amphoraId: amp.id,
      dir: deps.amphoraDir(amp.id),
      managementAddress: amp.lb_network_ip!,
      agentPort: deps.settings.agentPort,
      certPem: cert.certPem,
      keyPem: cert.keyPem,
      clientCaPem: deps.ca.clientCaPem,
      // Without a data plane no agent runs to sign heartbeats, and no heartbeat secret need exist.
      heartbeat: { key: deps.dataPlane ? heartbeatKey(deps.settings.heartbeatSecret, amp.id) : '', targets: [deps.settings.healthListen], intervalMs: deps.settings.heartbeatIntervalMs },
      haproxyBinary: deps.settings.haproxyBinary,
      maxconn: deps.settings.maxconn,
    },
    ctx.signal,
  );
  await updateAmphora(ctx.db.kysely, amp.id, { compute_id: computeId, status: 'BOOTING', cert_serial: cert.serial, cert_expiration: timestamp(cert.notAfter) });
}

const COMPUTE_CHECK_MS = 1000;

/**
 * Waits until the agent answers over mTLS as this amphora, within amphora.bootTimeoutMs. Gives
 * up early when the amphora's processes have exited: waiting longer would only hide why.
 */
export function waitForAgent(load: AmphoraDepsLoader, round: Round = 0): Step {
  return {
    name: 'wait-for-agent',
    async run(ctx) {
      const deps = await load();
      await allSettled((await builtAmphorae(ctx, round)).map((amp) => waitForAgentOf(ctx, deps, amp)));
    },
  };
}

export async function waitForAgentOf(ctx: BootContext, deps: AmphoraDeps, amp: AmphoraRow): Promise<void> {
  const exited = new AbortController();
  const watch = setInterval(() => {
    void ctx.heartbeat().catch(() => undefined);
    void deps.compute.status(amp.compute_id!).then(
      (status) => {
        if (status === 'stopped') exited.abort(new Error(`the processes of amphora ${amp.id} exited before its agent answered; see agent.log in ${deps.amphoraDir(amp.id)}`));
      },
      () => undefined,
    );
  }, COMPUTE_CHECK_MS);
  const deadline = Date.now() + deps.settings.bootTimeoutMs;
  const waiting = AbortSignal.any([ctx.signal, exited.signal]);
  try {
    // The boot's own announcement first (no polling); the agent is then asked once, or polled after a resume.
    await deps.compute.started(amp.compute_id!, AbortSignal.any([waiting, AbortSignal.timeout(deps.settings.bootTimeoutMs)])).catch((e: unknown) => {
      if (waiting.aborted || (e as { name?: unknown } | null)?.name !== 'TimeoutError') throw e;
    });
    await withAgent(deps, amp, (client) => client.waitReady(waiting, deadline));
  } finally {
    clearInterval(watch);
  }
}

/**
 * Makes the load balancer's VIPs reachable on the amphorae and records them there. Without a data
 * plane nothing could bind them, so they are only recorded, and every amphora gets the VRRP port
 * Octavia's no-op network driver reports: the VIP's address on a port id it invents. A migration's
 * STANDALONE amphora is let the VIPs through without holding them: claim-vip moves the traffic
 * to it once it serves.
 */
export function plugVip(load: AmphoraDepsLoader, round: Round = 0): Step {
  return {
    name: 'plug-vip',
    async run(ctx) {
      const { network, dataPlane } = await load();
      const vips = await vipsOf(ctx.db.kysely, ctx.loadBalancerId);
      const haIp = vips.addresses[0] ?? null;
      for (const amp of await builtAmphorae(ctx, round)) {
        let vrrp: Partial<Pick<AmphoraRow, 'vrrp_ip' | 'vrrp_port_id' | 'vrrp_interface'>> = { vrrp_ip: haIp, vrrp_port_id: amp.vrrp_port_id ?? randomUUID() };
        if (dataPlane) {
          if (!vips.subnetId) throw new Error(`load balancer ${ctx.loadBalancerId} has no VIP subnet to plug its amphorae into`);
          const floating = isVrrp(amp.role) || ctx.operation === 'loadbalancer.migrate';
          const base = await network.plugVip(ctx.db.kysely, { amphoraId: amp.id, subnetId: vips.subnetId, addresses: vips.addresses, floating });
          vrrp = base ? { vrrp_ip: base.address, vrrp_port_id: base.portId, vrrp_interface: base.interface } : {};
        }
        await updateAmphora(ctx.db.kysely, amp.id, { ha_ip: haIp, ha_port_id: vips.portId, ...vrrp });
      }
    },
    async revert(ctx) {
      const deps = await load();
      for (const amp of await unfinishedBuilt(ctx.db.kysely, ctx.jobId, [round])) await unplugVips(ctx, deps, amp);
    },
  };
}

const REANNOUNCE_MS = 50;
const VIP_HELD_CHECK_MS = 50;

/**
 * A new pair's keepalived elects its MASTER a few advertisement intervals after it starts; until one of
 * the pair holds the VIPs the amphorae it replaces still carry the traffic and must not be retired. The
 * agents are asked (VRRP's state changes are seen by nothing else that the controller can reach).
 */
async function untilPairHoldsVip(ctx: Pick<StepContext, 'signal'>, deps: AmphoraDeps, pair: readonly AmphoraRow[]): Promise<void> {
  const boundMs = 20 * deps.settings.vrrpAdvertIntervalMs + 10_000;
  const deadline = Date.now() + boundMs;
  for (;;) {
    const held = await Promise.all(pair.map((amp) => withAgent(deps, amp, (client) => client.info()).then((i) => i.vipHeld, () => false)));
    if (held.some((h) => h !== false)) return;
    if (Date.now() > deadline) throw new Error(`neither amphora of the new pair (${pair.map((a) => a.id).join(', ')}) took the VIPs within ${boundMs / 1000} s: see keepalived's log in their agent.log`);
    await sleep(VIP_HELD_CHECK_MS, undefined, { signal: ctx.signal });
  }
}

/**
 * A migration moves the traffic to the amphorae a round built once they serve, before the old ones are
 * retired (retire-old-amphorae then drains them: their connections finish):
 * - a new pair: keepalived moves the VIPs; the step waits until one of the two holds them;
 * - a half joining the amphora that stays: when the one leaving holds the VIPs, the one staying
 *   announces them now, so the traffic is there before the leaving one's keepalived stops;
 * - a STANDALONE amphora takes the VIPs and announces them. A pair it replaces first stops
 *   re-announcing them (keepalived's garp_master_refresh), then leaves VRRP (its keepalived stops,
 *   taking the VIPs off without a word; the BACKUP first, so it never takes them over) while the new
 *   amphora keeps announcing, should anything of the pair still draw the traffic back.
 */
export function claimVip(load: AmphoraDepsLoader, round: Round = 0): Step {
  return {
    name: 'claim-vip',
    async run(ctx) {
      const deps = await load();
      if (!deps.dataPlane) return;
      const built = await builtAmphorae(ctx, round);
      const { replaced } = await roundPlan(ctx, round, (await placementOf(ctx)).topology);
      const vips = await vipsOf(ctx.db.kysely, ctx.loadBalancerId);
      const announce = async (amphorae: readonly AmphoraRow[]) => {
        for (const amp of amphorae) await deps.network.claimVip(ctx.db.kysely, { amphoraId: amp.id, subnetId: vips.subnetId!, addresses: vips.addresses });
      };
      if (built.some((a) => a.role === 'MASTER')) return untilPairHoldsVip(ctx, deps, built);
      if (built.every((a) => isVrrp(a.role))) {
        if (replaced.some((a) => a.status === 'ALLOCATED' && a.role === 'MASTER'))
          await announce((await allocated(ctx)).filter((a) => isVrrp(a.role) && !replaced.some((r) => r.id === a.id)));
        return;
      }
      const pair = replaced.filter((a) => isVrrp(a.role) && a.status !== 'DELETED').sort(masterLast);
      if (pair.length) await pushToAmphorae(ctx, deps, { push: pair, pair, leaving: true });
      await announce(built);
      if (!pair.length) return;
      const again = setInterval(() => void announce(built).catch(() => undefined), REANNOUNCE_MS);
      try {
        for (const amp of pair) await pushToAmphorae(ctx, deps, { push: [amp], pair: [] });
      } finally {
        clearInterval(again);
      }
      await announce(built);
    },
  };
}

/**
 * Which amphorae a push-config step configures (`push`), and the amphorae serving the load balancer once
 * the job is done (`pair`): an ACTIVE_STANDBY amphora's keepalived and HAProxy peers are the others.
 */
export type PushTargets = (ctx: StepContext) => Promise<{ push: AmphoraRow[]; pair: AmphoraRow[]; together?: boolean; leaving?: boolean }>;

export const allocated = (ctx: Pick<StepContext, 'db' | 'loadBalancerId'>) => ctx.db.kysely.selectFrom('amphora').selectAll().where('load_balancer_id', '=', ctx.loadBalancerId).where('status', '=', 'ALLOCATED').execute();

/** The amphorae a create builds: a new pair's agents take their configuration at once (both start as BACKUP). */
export const builtByJob: PushTargets = async (ctx) => {
  const built = await builtAmphorae(ctx);
  return { push: built, pair: built, together: true };
};

/**
 * A failover round's: the amphorae it builds and those it keeps (the survivor of a pair), which learns
 * its new peer; nothing when the round builds nothing.
 */
export function builtAndKept(round: Round = 0): PushTargets {
  return async (ctx) => {
    const built = await builtAmphorae(ctx, round);
    if (!built.length) return { push: [], pair: [] };
    const { replaced } = await roundPlan(ctx, round, (await placementOf(ctx)).topology);
    const kept = (await allocated(ctx)).filter((a) => !replaced.some((r) => r.id === a.id) && !built.some((b) => b.id === a.id));
    // The survivor first: it learns its new peer before that peer's keepalived starts, which then hears the MASTER at once.
    const pair = [...kept, ...built];
    return { push: pair, pair };
  };
}

/**
 * A migration round's: as builtAndKept, and the amphorae of a pair the round replaces stay peers of the
 * others until they leave, so a MASTER being replaced is heard (nothing preempts it) until its last
 * advertisement hands the VIPs to the amphora that stays. The final push (inService) drops them.
 */
export function builtKeptAndLeaving(round: Round = 0): PushTargets {
  return async (ctx) => {
    const targets = await builtAndKept(round)(ctx);
    if (!targets.push.length) return targets;
    const { replaced } = await roundPlan(ctx, round, (await placementOf(ctx)).topology);
    return { push: targets.push, pair: [...targets.pair, ...replaced.filter((a) => a.status === 'ALLOCATED' && isVrrp(a.role))] };
  };
}

/** The amphorae serving the load balancer (every change to its tree). */
export const inService: PushTargets = async (ctx) => {
  const amphorae = await allocated(ctx);
  if (!amphorae.length) throw new Error(`load balancer ${ctx.loadBalancerId} has no amphora in service (ALLOCATED) to configure; a failover builds one`);
  return { push: amphorae, pair: amphorae };
};

/** The amphora the job's payload names (the admin API's configure). */
export const namedInPayload: PushTargets = async (ctx) => {
  const id = String(ctx.payload.amphora_id);
  const amp = await findAmphora(ctx.db.kysely, id);
  if (!amp || amp.status === 'DELETED') throw new Error(`amphora ${id} does not exist`);
  const pair = await allocated(ctx);
  return { push: [amp], pair: pair.some((a) => a.id === id) ? pair : [...pair, amp] };
};

async function nextConfigVersion(ctx: StepContext): Promise<number> {
  const row = await ctx.db.kysely
    .updateTable('load_balancer')
    .set((eb) => ({ config_version: eb('config_version', '+', 1) }))
    .where('id', '=', ctx.loadBalancerId)
    .returning('config_version')
    .executeTakeFirstOrThrow();
  return row.config_version;
}

/**
 * Sends the whole configuration, under a new version, to each amphora. A retried push sends a
 * newer version of the same content, which the agent applies without harm.
 */
export async function pushToAmphorae(ctx: StepContext, deps: AmphoraDeps, { push, pair, together, leaving }: Awaited<ReturnType<PushTargets>>): Promise<void> {
  if (!push.length) return;
  const version = await nextConfigVersion(ctx);
  const vips = deps.dataPlane ? await vipsOf(ctx.db.kysely, ctx.loadBalancerId) : null;
  const failed = async (amp: AmphoraRow, e: unknown) => {
    if (!ctx.signal.aborted) await updateAmphora(ctx.db.kysely, amp.id, { status_reason: `push-config: ${message(e)}` });
    return e;
  };
  const pushes: Array<() => Promise<void>> = [];
  // Ports one after another (each takes an address in a transaction of its own); then the agents.
  for (const amp of push) {
    const vrrp = vrrpConfig(amp.id, pair, deps.settings);
    const config = { ...(await buildAmphoraConfig(ctx.db.kysely, deps.keyManager, ctx.loadBalancerId, amp.id, version)), ...(vrrp && { vrrp: { ...vrrp, ...(leaving && { leaving }) } }) };
    try {
      if (vips?.subnetId) {
        await deps.network.plugMemberNetworks(ctx.db.kysely, amp.id, vips.subnetId, memberAddresses(config));
        await deps.network.updateSecurityGroup(ctx.db.kysely, amp.id, securityGroup(config, deps.settings, vips.securityGroups));
      }
    } catch (e) {
      throw await failed(amp, e);
    }
    pushes.push(async () => {
      try {
        const applied = await withAgent(deps, amp, (client) => client.putConfig(config, ctx.signal));
        await updateAmphora(ctx.db.kysely, amp.id, { config_version: applied.version, status_reason: null });
      } catch (e) {
        throw await failed(amp, e);
      }
    });
  }
  if (together) await allSettled(pushes.map((p) => p()));
  else for (const p of pushes) await p();
}

/** Where the HAProxies of a pair exchange their stick tables, on their base ports. */
export const HAPROXY_PEERS_PORT = 1025;

/**
 * This amphora's half of an ACTIVE_STANDBY pair, from the rows plug-vip filled; undefined for a STANDALONE
 * amphora, or one without a base port (nothing runs under compute.driver noop).
 */
function vrrpConfig(amphoraId: string, pair: readonly AmphoraRow[], settings: Pick<AmphoraDeps['settings'], 'vrrpAdvertIntervalMs'>): VrrpConfig | undefined {
  const self = pair.find((a) => a.id === amphoraId);
  if (!self || !isVrrp(self.role) || !self.vrrp_ip || !self.vrrp_interface) return undefined;
  const peers = pair.filter((a) => a.id !== amphoraId && isVrrp(a.role) && a.vrrp_ip);
  if (!peers.length) throw new Error(`amphora ${amphoraId} (${self.role}) has no peer with a base port to pair with`);
  return {
    role: self.role as VrrpConfig['role'],
    priority: self.vrrp_priority ?? VRRP_PRIORITY[self.role!]!,
    virtualRouterId: self.vrrp_id ?? VRRP_ID,
    interface: self.vrrp_interface,
    address: self.vrrp_ip,
    peers: peers.map((p) => p.vrrp_ip!),
    vipPrefixLength: ipVersion(self.ha_ip ?? self.vrrp_ip) === 6 ? 128 : 32,
    advertIntervalMs: settings.vrrpAdvertIntervalMs,
    haproxyPeers: [self, ...peers].map((a) => ({ name: a.id, address: a.vrrp_ip!, port: HAPROXY_PEERS_PORT })),
  };
}

/** Octavia's VIP security group of the amphora: its enabled listeners from their allowed CIDRs (or the user's groups), its pair, its agent. */
function securityGroup(config: AmphoraConfig, settings: AmphoraDeps['settings'], vipSecurityGroups: string[]): SecurityGroup {
  return {
    vipSecurityGroups,
    listeners: config.listeners.filter((l) => l.enabled).map((l) => ({ protocol: l.protocol === 'UDP' ? 'udp' : l.protocol === 'SCTP' ? 'sctp' : 'tcp', port: l.port, allowedCidrs: l.allowedCidrs ?? [] })),
    peers: config.vrrp?.peers ?? [],
    peersPort: HAPROXY_PEERS_PORT,
    agentPort: settings.agentPort,
    heartbeatTargets: [settings.healthListen],
  };
}

/** Where the amphora connects on members' behalf: their addresses and monitor addresses. */
function memberAddresses(config: AmphoraConfig): string[] {
  return config.pools.flatMap((pool) => pool.members.flatMap((m) => (m.monitorAddress ? [m.address, m.monitorAddress] : [m.address])));
}

export function pushConfig(load: AmphoraDepsLoader, targets: PushTargets): Step {
  return {
    name: 'push-config',
    async run(ctx) {
      await pushToAmphorae(ctx, await load(), await targets(ctx));
    },
  };
}

/**
 * The amphorae serve: ALLOCATED, the tree settles, and failed failovers before this one are forgotten;
 * a migration's load balancer is from now on of the placement it moved to.
 */
export function markActive(load: AmphoraDepsLoader): Step {
  return {
    name: 'mark-active',
    async run(ctx) {
      const { dataPlane } = await load();
      await ctx.db.kysely.transaction().execute(async (trx) => {
        await trx.updateTable('amphora').set({ status: 'ALLOCATED', status_reason: null, updated_at: timestamp() }).where(builtBy(ctx.jobId)).execute();
        await recordMigration(trx, ctx);
        await settleAmphoraTree(trx, ctx.loadBalancerId, { dataPlane });
        await forgetFailovers(trx, ctx.loadBalancerId);
      });
    },
  };
}

export function settle(load: AmphoraDepsLoader): Step {
  return {
    name: 'settle',
    async run(ctx) {
      const { dataPlane } = await load();
      await ctx.db.kysely.transaction().execute((trx) => settleAmphoraTree(trx, ctx.loadBalancerId, { dataPlane }));
    },
  };
}

/** Load balancer delete: every amphora of it goes (Octavia makes no agent call either). */
export function stopAmphorae(load: AmphoraDepsLoader): Step {
  return {
    name: 'stop-amphorae',
    async run(ctx) {
      const deps = await load();
      const amphorae = await ctx.db.kysely.selectFrom('amphora').selectAll().where('load_balancer_id', '=', ctx.loadBalancerId).where('status', '!=', 'DELETED').execute();
      for (const amp of amphorae) await retireAmphora(ctx, deps, amp);
    },
  };
}

/**
 * Failover, once the round's replacement serves: what the round replaces (see roundPlan). A failure here
 * must not undo the replacement, which already carries the traffic: the old amphora is left in ERROR, with
 * the reason, for an admin's delete. The round's amphorae are then in service, so a later round's failure
 * leaves them serving.
 */
export function retireOldAmphorae(load: AmphoraDepsLoader, round: Round = 0): Step {
  return {
    name: 'retire-old-amphorae',
    async run(ctx) {
      const deps = await load();
      const built = await builtAmphorae(ctx, round);
      if (!built.length) return;
      const { replaced } = await roundPlan(ctx, round, (await placementOf(ctx)).topology);
      await retireInTurn(ctx, deps, replaced, 'retire-old-amphorae');
      await ctx.db.kysely.updateTable('amphora').set({ status: 'ALLOCATED', updated_at: timestamp() }).where('id', 'in', built.map((a) => a.id)).execute();
    },
  };
}

/**
 * Retires amphorae whose successors already carry the traffic, a MASTER last (a BACKUP that outlived it
 * would take the VIP back as it stops). One that cannot be retired is left in ERROR with the reason, for
 * an admin's delete: failing the job would undo the successors. Returns those left.
 */
export async function retireInTurn(ctx: StepContext, deps: AmphoraDeps, amphorae: readonly AmphoraRow[], step: string): Promise<AmphoraRow[]> {
  const left: AmphoraRow[] = [];
  for (const amp of [...amphorae].sort(masterLast)) {
    try {
      await retireAmphora(ctx, deps, amp);
    } catch (e) {
      if (ctx.signal.aborted) throw e;
      ctx.log.warn({ err: e, amphora: amp.id }, 'could not retire an amphora whose successor serves; it is left in ERROR');
      await updateAmphora(ctx.db.kysely, amp.id, { status: 'ERROR', status_reason: `${step}: ${message(e)}` });
      left.push(amp);
    }
  }
  return left;
}

/** The admin API's delete of a failed amphora. */
export function deleteAmphora(load: AmphoraDepsLoader): Step {
  return {
    name: 'delete-amphora',
    async run(ctx) {
      const amp = await findAmphora(ctx.db.kysely, String(ctx.payload.amphora_id));
      if (amp && amp.status !== 'DELETED') await retireAmphora(ctx, await load(), amp);
    },
  };
}
