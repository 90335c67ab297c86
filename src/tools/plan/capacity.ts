/**
 * The arithmetic of the capacity plan, apart from where its figures come from: resources with a capacity, what
 * uses them now and what failover holds back; classes of load balancers with what one of each takes; how many
 * load balancers of the plan's mix each resource holds, which one runs out first, and at what count.
 */

export interface Resource {
  key: string;
  /** What a person reads, e.g. "VIP addresses of public-subnet (127.16.0.0/16)". */
  label: string;
  unit: string;
  capacity: number;
  /** Everything that holds it now, the live load balancers included. */
  inUse: number;
  /** Held free for the replacement amphorae a failover builds before the failed ones go (N+1). */
  failover: number;
}

export interface ClassDemand {
  name: string;
  /** Load balancers of the class: planned (a classes file), or running (--from-live). */
  count: number;
  /** What one load balancer of the class takes of each resource, by key; a resource not named takes none. */
  perLb: Readonly<Record<string, number>>;
}

/**
 * `planned`: the classes come on top of what runs now. `live`: the classes are what runs now (already in
 * each resource's inUse), and the question is how far they can grow.
 */
export type PlanMode = 'planned' | 'live';

export interface ResourceFit extends Resource {
  /** What each class takes in all (count × per load balancer), in the order of the classes. */
  byClass: number[];
  /** In use by anything but the classes. */
  other: number;
  /** other + the classes + failover headroom. */
  after: number;
  /** capacity − after; negative when it does not fit. */
  free: number;
  /** Load balancers of the plan's mix this resource holds, with failover headroom; null: the mix takes none of it. */
  holds: number | null;
  /** The same without failover headroom. */
  holdsWithoutFailover: number | null;
}

export interface ClassFit {
  name: string;
  count: number;
  /** Load balancers of this class the resources hold, the other classes as they are; null: no limit. */
  maxCount: number | null;
  /** The resource that holds no more of it. */
  limitedBy: string | null;
}

export type VerdictKind = 'fits' | 'fits-without-failover-headroom' | 'exceeds' | 'no-limit';

export interface Verdict {
  kind: VerdictKind;
  /** The label of the first resource to run out, growing the mix in its proportions. */
  firstLimit: string | null;
  /** Load balancers of the mix that fit before it runs out. */
  atCount: number | null;
  sentence: string;
}

export interface CapacityPlan {
  resources: ResourceFit[];
  classes: ClassFit[];
  verdict: Verdict;
}

const sum = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);

/** Whole load balancers taking `each` that fit in `room`; null when they take none of it. */
function holding(room: number, each: number): number | null {
  if (each <= 0) return null;
  return Math.max(0, Math.floor(room / each + 1e-9));
}

/** The smallest of `counts` (nulls are no limit) and its index. */
function tightest(counts: readonly (number | null)[]): { count: number; index: number } | null {
  let best: { count: number; index: number } | null = null;
  counts.forEach((count, index) => {
    if (count !== null && (best === null || count < best.count)) best = { count, index };
  });
  return best;
}

export function planCapacity(resources: readonly Resource[], classes: readonly ClassDemand[], mode: PlanMode): CapacityPlan {
  const total = sum(classes.map((c) => c.count));
  const fits = resources.map((r): ResourceFit => {
    const byClass = classes.map((c) => c.count * (c.perLb[r.key] ?? 0));
    const other = mode === 'live' ? Math.max(0, r.inUse - sum(byClass)) : r.inUse;
    const after = other + sum(byClass) + r.failover;
    // Per load balancer of the mix, in the classes' proportions (equal shares when the counts are all 0).
    const weights = total > 0 ? classes.map((c) => c.count / total) : classes.map(() => 1 / Math.max(1, classes.length));
    const each = sum(classes.map((c, i) => weights[i]! * (c.perLb[r.key] ?? 0)));
    const room = r.capacity - other;
    return { ...r, byClass, other, after, free: r.capacity - after, holds: holding(room - r.failover, each), holdsWithoutFailover: holding(room, each) };
  });
  const classFits = classes.map((c, i): ClassFit => {
    const counts = fits.map((r) => {
      const others = sum(r.byClass) - r.byClass[i]!;
      return holding(r.capacity - r.other - r.failover - others, c.perLb[r.key] ?? 0);
    });
    const limit = tightest(counts);
    return { name: c.name, count: c.count, maxCount: limit?.count ?? null, limitedBy: limit ? fits[limit.index]!.label : null };
  });
  return { resources: fits, classes: classFits, verdict: verdictOf(fits, total, mode) };
}

function verdictOf(fits: readonly ResourceFit[], total: number, mode: PlanMode): Verdict {
  const first = tightest(fits.map((r) => r.holds));
  if (!first) return { kind: 'no-limit', firstLimit: null, atCount: null, sentence: 'No counted resource limits this mix: its load balancers take nothing that has a known capacity here.' };
  const r = fits[first.index]!;
  const held = first.count;
  const withoutFailover = tightest(fits.map((f) => f.holdsWithoutFailover))!;
  const whose = mode === 'planned' ? `the plan's ${total} load balancer(s)` : `today's ${total} load balancer(s)`;
  const growth = mode === 'planned' ? `${held - total} more than the plan` : `${held - total} more than today`;
  const base = { firstLimit: r.label, atCount: held };
  if (total <= held)
    return { ...base, kind: 'fits', sentence: `${capital(whose)} fit. The first limit is ${r.label}: it holds ${held} load balancer(s) of this mix (${growth}), then it runs out.` };
  if (total <= withoutFailover.count) {
    const short = fits.filter((f) => f.holds !== null && f.holds < total).map((f) => f.label);
    return {
      ...base,
      kind: 'fits-without-failover-headroom',
      sentence:
        `${capital(whose)} fit only without failover headroom: ${short.join(', ')} would leave no room for the replacement amphorae a failover builds before ` +
        `the failed ones go (N+1). With that headroom ${r.label} holds ${held}.`,
    };
  }
  return {
    ...base,
    kind: 'exceeds',
    sentence: `${capital(whose)} do not fit: ${r.label} runs out first, at ${held} load balancer(s) of this mix (needs ${format(r.after)} ${r.unit} with failover headroom, has ${format(r.capacity)}).`,
  };
}

const capital = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** Figures as the table and the picture print them: whole numbers plain, others to one decimal. */
export function format(value: number): string {
  return Number.isInteger(value) ? String(value) : value.toFixed(1);
}
