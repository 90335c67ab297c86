/** A small observed tree for status-derivation tests (amphora heartbeats and OVN probes alike). */
import type { ObservedTree, StatusChange } from '../../src/operating-status/derivation.js';
import type { OperatingStatus, ProvisioningStatus } from '../../src/domain/enums.js';

export const LB = '00000000-0000-4000-8000-000000000001';
export const L1 = '00000000-0000-4000-8000-000000000011';
export const L2 = '00000000-0000-4000-8000-000000000012';
export const P1 = '00000000-0000-4000-8000-000000000021';
export const P2 = '00000000-0000-4000-8000-000000000022';
export const M1 = '00000000-0000-4000-8000-000000000031';
export const M2 = '00000000-0000-4000-8000-000000000032';
export const M3 = '00000000-0000-4000-8000-000000000033';
export const M4 = '00000000-0000-4000-8000-000000000034';

type Extra = Partial<{ admin_state_up: boolean; provisioning_status: ProvisioningStatus }>;
export const row = (id: string, operating_status: OperatingStatus = 'ONLINE', extra: Extra = {}) => ({ id, admin_state_up: true, provisioning_status: 'ACTIVE' as ProvisioningStatus, operating_status, ...extra });
export const member = (id: string, pool_id: string, operating_status: OperatingStatus = 'ONLINE', extra: Extra = {}) => ({ ...row(id, operating_status, extra), pool_id });

/** Two listeners, pools P1 (M1, M2) and P2 (M3, unmonitored), config version 3; `patch` replaces parts. */
export function observedTree(patch: Partial<ObservedTree> = {}): ObservedTree {
  return {
    lb: { ...row(LB), config_version: 3 },
    listeners: [row(L1), row(L2)],
    pools: [row(P1), row(P2)],
    members: [member(M1, P1), member(M2, P1), member(M3, P2, 'NO_MONITOR')],
    ...patch,
  };
}

export const sorted = (changes: StatusChange[]) => [...changes].sort((a, b) => a.id.localeCompare(b.id));
