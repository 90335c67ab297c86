/**
 * What the provider conformance suite needs of a running Ostia: the API's calls with their
 * outcome asserted, bounded waits for a load balancer to settle, the status tree, and what one
 * provider's world looks like (addresses, backends, how traffic reaches a VIP).
 */
import assert from 'node:assert/strict';
import type { Harness } from './harness.js';

export type Obj = Record<string, any>;

/** A backend as a member sees it: `name` is what it answers to a request. */
export interface MemberSpec {
  name: string;
  address: string;
  port: number;
  subnetId?: string;
}

/** A (feature, value) pair in the vocabulary of the OVN capability table (src/providers/ovn/capabilities.ts). */
export interface Need {
  feature: string;
  value: string;
}

/** What a provider refuses, with the exact faultstring of its 501. */
export interface Refusal extends Need {
  reason: string;
  faultstring: string;
}

/** One provider's world: where VIPs and members live and how traffic is sent to a VIP. */
export interface ProviderEnv {
  provider: string;
  vipSubnetId: string;
  /** A VIP address of this run's own (amphora: loopback shared with other tests), or undefined to let Ostia allocate one. */
  vipAddress(): string | undefined;
  listenerPort(): number;
  /** Two backends serving HTTP (TCP) that answer with their name. */
  tcpMembers: readonly [MemberSpec, MemberSpec];
  /** An address and port where nothing listens: a health monitor finds it down. */
  closedMember: MemberSpec;
  /** A CIDR holding the address traffic comes from (for allowed_cidrs). */
  clientCidr: string;
  /** An IPv6 backend, for a member of another family than the VIP; absent where that is refused. */
  ipv6Member?: MemberSpec;
  /** `count` HTTP GETs of `path` on new connections; one entry each, the answer or '' for a failure. */
  http(vip: string, port: number, count: number, path?: string): Promise<string[]>;
  /** Absent where UDP cannot be balanced. */
  udp?: {
    /** Two backends answering UDP datagrams with their name. */
    members: readonly [MemberSpec, MemberSpec];
    /** `count` UDP requests, each from a new source port; one entry each, the answer or '' for a failure. */
    ask(vip: string, port: number, count: number): Promise<string[]>;
  };
  /** A certificate container (certificate, key, intermediates) for TLS listeners, stored once in the key manager. */
  tlsContainer(): Promise<string>;
  /** What this provider refuses (feature, value) and with which faultstring. */
  refusals: readonly Refusal[];
  close(): Promise<void>;
}

const SETTLE_MS = 90_000;
const POLL_MS = 50;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Polls `probe` until `ok` holds for what it returns, at most `timeoutMs`; the failure names the
 * last value seen.
 */
export async function until<T>(what: string, probe: () => Promise<T>, ok: (value: T) => boolean, timeoutMs = 20_000, intervalMs = 250): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: T | undefined;
  for (let i = 0; i <= Math.ceil(timeoutMs / intervalMs); i++) {
    last = await probe();
    if (ok(last)) return last;
    if (Date.now() > deadline) break;
    await sleep(intervalMs);
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}; last seen: ${JSON.stringify(last)}`);
}

export class Api {
  constructor(readonly h: Harness) {}

  request(method: string, path: string, body?: unknown) {
    return this.h.request(method, `/v2/lbaas${path}`, { body });
  }

  /** A call that must succeed; its JSON body (or {}). */
  async ok(method: string, path: string, body?: unknown): Promise<Obj> {
    const r = await this.request(method, path, body);
    assert.ok(r.statusCode < 300, `${method} ${path} → ${r.statusCode} ${r.body}`);
    return r.body ? (r.json() as Obj) : {};
  }

  async gone(path: string): Promise<void> {
    const r = await this.request('GET', path);
    assert.equal(r.statusCode, 404, `GET ${path} → ${r.statusCode} ${r.body}`);
  }

  /** The load balancer's provisioning status once it left PENDING_* (DELETED when gone). */
  async settled(lbId: string): Promise<string> {
    const deadline = Date.now() + SETTLE_MS;
    for (let i = 0; i <= SETTLE_MS / POLL_MS; i++) {
      const row = await this.h.runtime.db.kysely.selectFrom('load_balancer').select('provisioning_status').where('id', '=', lbId).executeTakeFirst();
      const status = row?.provisioning_status ?? 'DELETED';
      if (!status.startsWith('PENDING_') || Date.now() > deadline) return status;
      await sleep(POLL_MS);
    }
    throw new Error(`load balancer ${lbId} did not settle within ${SETTLE_MS} ms`);
  }

  /** Waits out the operation and asserts the load balancer is ACTIVE, naming the status reason if not. */
  async active(lbId: string): Promise<void> {
    const status = await this.settled(lbId);
    if (status !== 'ACTIVE') {
      const lb = await this.h.runtime.db.kysely.selectFrom('load_balancer').select(['status_reason']).where('id', '=', lbId).executeTakeFirst();
      assert.fail(`load balancer ${lbId} is ${status}, not ACTIVE: ${lb?.status_reason ?? ''}`);
    }
  }

  async tree(lbId: string): Promise<StatusTree> {
    return (await this.ok('GET', `/loadbalancers/${lbId}/status`)).statuses.loadbalancer as StatusTree;
  }
}

export interface StatusTree {
  id: string;
  provisioning_status: string;
  operating_status: string;
  listeners: Array<{
    id: string;
    name: string;
    provisioning_status: string;
    operating_status: string;
    pools: Array<{
      id: string;
      name: string;
      provisioning_status: string;
      operating_status: string;
      health_monitor?: { id: string; provisioning_status: string; operating_status: string };
      members: Array<{ id: string; name: string; address: string; protocol_port: number; provisioning_status: string; operating_status: string }>;
    }>;
  }>;
}

/** Every object of the tree with its statuses, keyed `kind:name`: one value to compare in one assertion. */
export function treeStatuses(tree: StatusTree): Record<string, string> {
  const out: Record<string, string> = { loadbalancer: `${tree.provisioning_status}/${tree.operating_status}` };
  for (const l of tree.listeners) {
    out[`listener:${l.name}`] = `${l.provisioning_status}/${l.operating_status}`;
    for (const p of l.pools) {
      out[`pool:${p.name}`] = `${p.provisioning_status}/${p.operating_status}`;
      if (p.health_monitor) out[`healthmonitor:${p.name}`] = `${p.health_monitor.provisioning_status}/${p.health_monitor.operating_status}`;
      for (const m of p.members) out[`member:${m.name}`] = `${m.provisioning_status}/${m.operating_status}`;
    }
  }
  return out;
}
