/**
 * Which pushes can be applied through HAProxy's runtime API instead of a reload: those where
 * nothing but pool members changed. Anything else (a listener, a pool setting, a monitor, the
 * VIP) changes proxies, and proxies change only by reload.
 */
import { isDeepStrictEqual } from 'node:util';
import type { AmphoraConfig, MemberConfig } from '../../domain/amphora-config.js';

export type MemberChange =
  | { kind: 'remove'; poolId: string; memberId: string }
  | { kind: 'add'; poolId: string; member: MemberConfig }
  | { kind: 'weight'; poolId: string; memberId: string; weight: number }
  | { kind: 'enabled'; poolId: string; memberId: string; enabled: boolean };

/** What HAProxy cannot change on a live server: a change of these replaces the server. */
const IDENTITY: readonly (keyof MemberConfig)[] = ['address', 'port', 'backup', 'monitorAddress', 'monitorPort'];

function withoutMembers(config: AmphoraConfig): unknown {
  return { ...config, version: 0, pools: config.pools.map((p) => ({ ...p, members: [] })) };
}

/**
 * The member changes from `previous` to `next`, removals first (a replaced member's name must be
 * free before it is added again), or null when something other than members changed.
 */
export function memberChanges(previous: AmphoraConfig, next: AmphoraConfig): MemberChange[] | null {
  if (!isDeepStrictEqual(withoutMembers(previous), withoutMembers(next))) return null;
  const removals: MemberChange[] = [];
  const additions: MemberChange[] = [];
  const updates: MemberChange[] = [];
  next.pools.forEach((pool, i) => {
    const before = new Map(previous.pools[i]!.members.map((m) => [m.id, m]));
    const after = new Set(pool.members.map((m) => m.id));
    for (const id of before.keys()) if (!after.has(id)) removals.push({ kind: 'remove', poolId: pool.id, memberId: id });
    for (const member of pool.members) {
      const old = before.get(member.id);
      if (!old) {
        additions.push({ kind: 'add', poolId: pool.id, member });
      } else if (IDENTITY.some((field) => old[field] !== member[field])) {
        removals.push({ kind: 'remove', poolId: pool.id, memberId: member.id });
        additions.push({ kind: 'add', poolId: pool.id, member });
      } else {
        if (old.weight !== member.weight) updates.push({ kind: 'weight', poolId: pool.id, memberId: member.id, weight: member.weight });
        if (old.enabled !== member.enabled) updates.push({ kind: 'enabled', poolId: pool.id, memberId: member.id, enabled: member.enabled });
      }
    }
  });
  return [...removals, ...additions, ...updates];
}
