/**
 * Which pushes can be applied through HAProxy's runtime API instead of a reload: those where
 * nothing but pool members and the content of listeners' TLS files changed (a renewed
 * certificate, CA bundle or CRL in the same slot). Anything else (a listener, a pool setting,
 * a monitor, the VIP, another number of certificates) changes proxies, and proxies change only
 * by reload.
 */
import { isDeepStrictEqual } from 'node:util';
import type { AmphoraConfig, ListenerConfig, MemberConfig } from '../domain/amphora-config.js';
import { tlsFiles, type TlsFile } from './haproxy/tls-files.js';

export type MemberChange =
  | { kind: 'remove'; poolId: string; memberId: string }
  | { kind: 'add'; poolId: string; member: MemberConfig }
  | { kind: 'weight'; poolId: string; memberId: string; weight: number }
  | { kind: 'enabled'; poolId: string; memberId: string; enabled: boolean };

/** What HAProxy cannot change on a live server: a change of these replaces the server. */
const IDENTITY: readonly (keyof MemberConfig)[] = ['address', 'port', 'backup', 'monitorAddress', 'monitorPort'];

export interface RuntimeChanges {
  members: MemberChange[];
  /** Frontend TLS files whose content changed, under the same name. */
  tlsFiles: TlsFile[];
}

/** A listener's TLS with every file's content blanked: which slots exist, not what fills them. */
function tlsSlots(listener: ListenerConfig): unknown {
  const { tls } = listener;
  if (!tls) return listener;
  const slot = (pem: string | null) => (pem === null ? null : '');
  return { ...listener, tls: { ...tls, certificates: tls.certificates.map(slot), clientCa: slot(tls.clientCa), clientCrl: slot(tls.clientCrl) } };
}

function shape(config: AmphoraConfig): unknown {
  return { ...config, version: 0, listeners: config.listeners.map(tlsSlots), pools: config.pools.map((p) => ({ ...p, members: [] })) };
}

/** What the runtime API can do of the push from `previous` to `next`, or null when it takes a reload. */
export function runtimeChanges(previous: AmphoraConfig, next: AmphoraConfig): RuntimeChanges | null {
  if (!isDeepStrictEqual(shape(previous), shape(next))) return null;
  const before = new Map(tlsFiles(previous).map((f) => [f.name, f.pem]));
  return { members: memberChanges(previous, next), tlsFiles: tlsFiles(next).filter((f) => f.side === 'frontend' && before.get(f.name) !== f.pem) };
}

/**
 * The member changes from `previous` to `next` (configs of the same shape), removals first (a
 * replaced member's name must be free before it is added again).
 */
function memberChanges(previous: AmphoraConfig, next: AmphoraConfig): MemberChange[] {
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
