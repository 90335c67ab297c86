/**
 * What the soak (bench/soak.ts) knows of the load balancers it drives: which are ACTIVE and may be
 * written, which wait for ACTIVE after a write, which reads and writes are in flight on each. A write
 * goes only to an ACTIVE load balancer with nothing in flight, and reads leave a load balancer alone
 * while a write to it is unanswered, so that every answer the soak gets was expected: a 409 (still
 * PENDING) or a 404 (deleted under a read) is an error of Ostia's, never of the bench's.
 * Also the seeding: `--lbs` load balancers, every fifth with a listener, pool, monitor and member.
 */
import { MEMBER_SUBNET_ID, VIP_SUBNET_ID } from '../../src/config.js';
import { graphBody, waitSettled, type ApiClient, type LoadBalancerView } from './lifecycle-api.js';
import { progress } from './progress.js';

export type LbState = 'active' | 'pending' | 'error';

export interface Lb {
  readonly id: string;
  name: string;
  state: LbState;
  /** Its pool, if it was made with one. */
  pool: string | null;
  /** The pool's members the soak knows of: those it added, and those a read showed while the load balancer was ACTIVE. */
  members: string[];
  /** Reads in flight: a write waits until there are none. */
  reading: number;
  /** A write is in flight: reads wait for its answer, so that what they see comes after it. */
  writing: boolean;
  /** performance.now() of the last read of a pending load balancer's status. */
  polledAt: number;
}

/** Tries of a random pick before giving up on finding a load balancer that fits. */
const PICK_TRIES = 20;
/** Every POOLED_EVERY-th load balancer has a listener, pool, monitor and member. */
export const POOLED_EVERY = 5;
const MEMBER_PORT = 8080;

export class Fleet {
  private readonly list: Lb[] = [];
  private readonly index = new Map<Lb, number>();
  /** Pending load balancers in the order they became so. */
  private readonly waiting = new Set<Lb>();
  private members = 0;
  private creates = 0;

  /** A member address no pool of the fleet has had yet. */
  nextMemberAddress(): string {
    return memberAddress(this.members++);
  }

  /** The next create's body: every POOLED_EVERY-th a graph create with a listener, pool, monitor and one member. */
  nextCreate(): unknown {
    const k = this.creates++;
    const name = `soak-${k}`;
    if (k % POOLED_EVERY !== 0) return { loadbalancer: { name, vip_subnet_id: VIP_SUBNET_ID, provider: 'noop' } };
    const member = { address: this.nextMemberAddress(), port: MEMBER_PORT };
    return graphBody(name, { provider: 'noop', vipSubnetId: VIP_SUBNET_ID, memberSubnetId: MEMBER_SUBNET_ID, listenerPort: 80, members: [member] });
  }

  get size(): number {
    return this.list.length;
  }

  all(): readonly Lb[] {
    return this.list;
  }

  add(lb: Lb): void {
    this.index.set(lb, this.list.length);
    this.list.push(lb);
    if (lb.state === 'pending') this.waiting.add(lb);
  }

  remove(lb: Lb): void {
    const i = this.index.get(lb);
    if (i === undefined) return;
    const last = this.list.pop()!;
    if (last !== lb) {
      this.list[i] = last;
      this.index.set(last, i);
    }
    this.index.delete(lb);
    this.waiting.delete(lb);
  }

  setState(lb: Lb, state: LbState): void {
    lb.state = state;
    if (state === 'pending') this.waiting.add(lb);
    else this.waiting.delete(lb);
  }

  /** A random load balancer that `fits`, or undefined when PICK_TRIES draws found none. */
  pick(fits: (lb: Lb) => boolean): Lb | undefined {
    for (let i = 0; i < PICK_TRIES && this.list.length; i++) {
      const lb = this.list[Math.floor(Math.random() * this.list.length)]!;
      if (fits(lb)) return lb;
    }
    return undefined;
  }

  /** The load balancer pending longest whose status was not read for `everyMs`, and which no write holds. */
  duePoll(now: number, everyMs: number): Lb | undefined {
    for (const lb of this.waiting) if (!lb.writing && now - lb.polledAt >= everyMs) return lb;
    return undefined;
  }
}

/** A read may go to a load balancer no write holds. */
export const readable = (lb: Lb): boolean => !lb.writing;
/** A write may go to an ACTIVE load balancer nothing holds. */
export const writable = (lb: Lb): boolean => lb.state === 'active' && !lb.writing && lb.reading === 0;

/** The k-th member address of the member subnet's allocation pool (127.32.0.10–127.32.255.250): unique for 62,000 members. */
function memberAddress(k: number): string {
  const n = 10 + (k % 62_000);
  return `127.32.${Math.floor(n / 250)}.${(n % 250) + 1}`;
}

export function memberBody(fleet: Fleet): unknown {
  return { member: { address: fleet.nextMemberAddress(), protocol_port: MEMBER_PORT, subnet_id: MEMBER_SUBNET_ID } };
}

/** What a load balancer's view says of it: its pool, its state as the fleet keeps it. */
export interface LbSeen extends LoadBalancerView {
  name: string;
  pools: Array<{ id: string }>;
}

export function stateOf(view: LoadBalancerView): LbState {
  return view.provisioning_status === 'ERROR' ? 'error' : view.provisioning_status.startsWith('PENDING_') ? 'pending' : 'active';
}

export function newLb(view: LbSeen, polledAt: number): Lb {
  return { id: view.id, name: view.name, state: stateOf(view), pool: view.pools[0]?.id ?? null, members: [], reading: 0, writing: false, polledAt };
}

const SEED_CLIENTS = 8;
const SEED_POLL_MS = 20;
const SEED_ACTIVE_TIMEOUT_MS = 120_000;

/** Creates `count` load balancers through `apis` (round-robin), each waited for until ACTIVE. */
export async function seedFleet(apis: readonly ApiClient[], count: number): Promise<Fleet> {
  const fleet = new Fleet();
  let next = 0;
  await Promise.all(
    Array.from({ length: SEED_CLIENTS }, async () => {
      while (next < count) {
        const k = next++;
        const api = apis[k % apis.length]!;
        const posted = await api.json<{ loadbalancer: { id: string } }>('POST', '/v2/lbaas/loadbalancers', fleet.nextCreate());
        const view = (await waitSettled(api, posted.loadbalancer.id, SEED_POLL_MS, SEED_ACTIVE_TIMEOUT_MS)) as LbSeen;
        if (view.provisioning_status !== 'ACTIVE') throw new Error(`seeding: load balancer ${view.id} went to ${view.provisioning_status}`);
        fleet.add(newLb(view, 0));
        if ((k + 1) % 200 === 0) progress(`  seeded ${k + 1}/${count}`);
      }
    }),
  );
  return fleet;
}
