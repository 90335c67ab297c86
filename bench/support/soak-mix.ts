/**
 * The soak's requests (bench/soak.ts): mostly reads — one load balancer (or, first, one that waits
 * for ACTIVE after a write, as clients poll), a page of the list, the list filtered, a pool's members,
 * the status tree — and some writes — a create or a delete that keep the count near `--lbs`, a
 * rename, a member added or removed. Each request is planned on the fleet (./soak-fleet.ts), which
 * it holds until answered, and its answer is applied back; an answer that is not the one expected
 * is an error, named by what it was and what came back.
 */
import type { Reply } from './lifecycle-api.js';
import { memberBody, newLb, readable, stateOf, writable, type Fleet, type Lb, type LbSeen } from './soak-fleet.js';

export const OPS = ['GET lb', 'GET lb (poll)', 'GET lbs page', 'GET lbs filtered', 'GET pool members', 'GET status tree', 'POST lb', 'DELETE lb', 'PUT lb name', 'POST member', 'DELETE member'] as const;
export type Op = (typeof OPS)[number];

/** How often, out of 100 requests, each kind is planned: 90 reads, 10 writes. */
const MIX = [
  ['one', 30],
  ['page', 15],
  ['filtered', 15],
  ['members', 15],
  ['status', 15],
  ['create-or-delete', 4],
  ['rename', 3],
  ['member', 3],
] as const;
type Kind = (typeof MIX)[number][0];
const WRITES: readonly Kind[] = ['create-or-delete', 'rename', 'member'];
const MIX_TOTAL = MIX.reduce((sum, [, weight]) => sum + weight, 0);
/** The share of writes in the mix, in %. */
export const WRITE_PERCENT = (100 * MIX.filter(([kind]) => WRITES.includes(kind)).reduce((sum, [, weight]) => sum + weight, 0)) / MIX_TOTAL;

/** A pending load balancer's status is read again no sooner than this, as clients waiting for ACTIVE poll. */
const POLL_EVERY_MS = 500;
const PAGE = 100;

export interface Call {
  op: Op;
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  path: string;
  body?: unknown;
  expect: number;
  /**
   * Applies the answer (null: none came) to the fleet and lets go of what the call held; returns what
   * was wrong with an answer of the expected status, if anything.
   */
  settle(reply: Reply | null, now: number): string | null;
}

export class Mix {
  /** Writes planned while no load balancer could take one, sent as a page read instead. */
  writesDeferred = 0;
  private filteredTurn = 0;
  /** Creates sent and not answered yet: they count toward the target already. */
  private creating = 0;

  constructor(
    private readonly fleet: Fleet,
    /** The count of load balancers the creates and deletes keep. */
    private readonly target: number,
  ) {}

  next(now: number): Call {
    const kind = drawKind();
    const call = this.plan(kind, now);
    if (call) return call;
    if (WRITES.includes(kind)) this.writesDeferred++;
    return this.page() ?? this.listFiltered(0);
  }

  private plan(kind: Kind, now: number): Call | undefined {
    switch (kind) {
      case 'one':
        return this.one(now);
      case 'page':
        return this.page();
      case 'filtered':
        return this.listFiltered(this.filteredTurn++);
      case 'members':
        return this.members();
      case 'status':
        return this.read(this.fleet.pick(readable), 'GET status tree', (lb) => `/v2/lbaas/loadbalancers/${lb.id}/status`);
      case 'create-or-delete':
        return this.fleet.size + this.creating < this.target ? this.create() : this.remove();
      case 'rename':
        return this.rename();
      case 'member':
        return this.changeMember();
    }
  }

  /** A read of `lb` (undefined: no load balancer fits) that holds it against writes until answered. */
  private read(lb: Lb | undefined, op: Op, path: (lb: Lb) => string, apply?: (lb: Lb, reply: Reply, now: number) => string | null): Call | undefined {
    if (!lb) return undefined;
    lb.reading++;
    return {
      op,
      method: 'GET',
      path: path(lb),
      expect: 200,
      settle: (reply, now) => {
        lb.reading--;
        return reply?.status === 200 && apply ? apply(lb, reply, now) : null;
      },
    };
  }

  /** GET one load balancer: the one waiting longest for ACTIVE, if one is due a look, else any. */
  private one(now: number): Call | undefined {
    const due = this.fleet.duePoll(now, POLL_EVERY_MS);
    return this.read(due ?? this.fleet.pick(readable), due ? 'GET lb (poll)' : 'GET lb', (lb) => `/v2/lbaas/loadbalancers/${lb.id}`, (lb, reply, at) => {
      const view = (JSON.parse(reply.text) as { loadbalancer: LbSeen }).loadbalancer;
      if (lb.state === 'pending') lb.polledAt = at;
      lb.pool ??= view.pools[0]?.id ?? null;
      const was = lb.state;
      this.fleet.setState(lb, stateOf(view));
      if (lb.state === 'error' && was !== 'error') return `load balancer went to ${view.provisioning_status}`;
      return null;
    });
  }

  /** A page of the list, from a marker anywhere in it, as a client paging through. */
  private page(): Call | undefined {
    return this.read(this.fleet.pick(readable), 'GET lbs page', (lb) => `/v2/lbaas/loadbalancers?limit=${PAGE}&marker=${lb.id}`);
  }

  /** The list filtered: by status, by one load balancer's name (which must find it alone), by operating status with fields and a sort. */
  private listFiltered(turn: number): Call {
    const byName = turn % 3 === 1 ? this.fleet.pick(readable) : undefined;
    if (byName)
      return this.read(byName, 'GET lbs filtered', (lb) => `/v2/lbaas/loadbalancers?name=${encodeURIComponent(lb.name)}`, (lb, reply) => {
        const found = (JSON.parse(reply.text) as { loadbalancers: Array<{ id: string }> }).loadbalancers;
        return found.length === 1 && found[0]!.id === lb.id ? null : `the name filter found ${found.length} load balancers for one name`;
      })!;
    const path = turn % 3 === 0 ? `/v2/lbaas/loadbalancers?provisioning_status=ACTIVE&limit=${PAGE}` : `/v2/lbaas/loadbalancers?operating_status=ONLINE&fields=id,name,provisioning_status&sort=name:asc&limit=${PAGE}`;
    return { op: 'GET lbs filtered', method: 'GET', path, expect: 200, settle: () => null };
  }

  /** A pool's members; what an ACTIVE load balancer's read shows is what the soak then knows of them. */
  private members(): Call | undefined {
    return this.read(this.fleet.pick((lb) => readable(lb) && lb.pool !== null), 'GET pool members', (lb) => `/v2/lbaas/pools/${lb.pool}/members`, (lb, reply) => {
      if (lb.state === 'active') lb.members = (JSON.parse(reply.text) as { members: Array<{ id: string }> }).members.map((m) => m.id);
      return null;
    });
  }

  private create(): Call {
    this.creating++;
    return {
      op: 'POST lb',
      method: 'POST',
      path: '/v2/lbaas/loadbalancers',
      body: this.fleet.nextCreate(),
      expect: 201,
      settle: (reply, now) => {
        this.creating--;
        if (reply?.status === 201) this.fleet.add(newLb((JSON.parse(reply.text) as { loadbalancer: LbSeen }).loadbalancer, now));
        return null;
      },
    };
  }

  /** A cascade delete; the load balancer leaves the fleet at once, so nothing reads it after. */
  private remove(): Call | undefined {
    const lb = this.fleet.pick(writable);
    if (!lb) return undefined;
    this.fleet.remove(lb);
    return { op: 'DELETE lb', method: 'DELETE', path: `/v2/lbaas/loadbalancers/${lb.id}?cascade=true`, expect: 204, settle: () => null };
  }

  /** A write to `lb`, which waits for ACTIVE once accepted. */
  private write(lb: Lb, call: Omit<Call, 'settle'>, accepted: (reply: Reply) => void): Call {
    lb.writing = true;
    return {
      ...call,
      settle: (reply, now) => {
        lb.writing = false;
        if (reply?.status === call.expect) {
          accepted(reply);
          lb.polledAt = now;
          this.fleet.setState(lb, 'pending');
        }
        return null;
      },
    };
  }

  private rename(): Call | undefined {
    const lb = this.fleet.pick(writable);
    if (!lb) return undefined;
    const name = `${lb.name.split('~')[0]}~${Math.random().toString(36).slice(2, 8)}`;
    return this.write(lb, { op: 'PUT lb name', method: 'PUT', path: `/v2/lbaas/loadbalancers/${lb.id}`, body: { loadbalancer: { name } }, expect: 200 }, () => (lb.name = name));
  }

  /** Adds a member to a pool with fewer than two the soak knows of, else removes one of them. */
  private changeMember(): Call | undefined {
    const lb = this.fleet.pick((it) => writable(it) && it.pool !== null);
    if (!lb) return undefined;
    const members = `/v2/lbaas/pools/${lb.pool}/members`;
    if (lb.members.length < 2)
      return this.write(lb, { op: 'POST member', method: 'POST', path: members, body: memberBody(this.fleet), expect: 201 }, (reply) =>
        lb.members.push((JSON.parse(reply.text) as { member: { id: string } }).member.id),
      );
    const member = lb.members[Math.floor(Math.random() * lb.members.length)]!;
    return this.write(lb, { op: 'DELETE member', method: 'DELETE', path: `${members}/${member}`, expect: 204 }, () => (lb.members = lb.members.filter((m) => m !== member)));
  }
}

function drawKind(): Kind {
  let r = Math.random() * MIX_TOTAL;
  for (const [kind, weight] of MIX) if ((r -= weight) < 0) return kind;
  return MIX[0][0];
}
