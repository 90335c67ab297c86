/**
 * Member rules of Octavia's API: defaults, and the plan of a batch
 * update (which members are created, updated or removed). Pure.
 */
import { apiError } from '../errors.js';
import { MemberDefaults } from '../defaults.js';
import { adminStateOf, withDefaults, type Patch } from './listener.js';

export interface MemberSettings {
  name: string;
  admin_state_up: boolean;
  weight: number;
  backup: boolean;
  monitor_address: string | null;
  monitor_port: number | null;
}

export const memberDefaults: MemberSettings = {
  name: '',
  admin_state_up: true,
  weight: MemberDefaults.weight,
  backup: MemberDefaults.backup,
  monitor_address: null,
  monitor_port: null,
};

/** A member as created (or, in a batch, as re-declared): every omitted setting takes its default. */
export function memberSettingsForCreate(input: Patch<MemberSettings>): MemberSettings {
  return { ...withDefaults(memberDefaults, input, memberDefaults), admin_state_up: adminStateOf(input.admin_state_up, true) };
}

export function memberSettingsForUpdate(stored: MemberSettings, patch: Patch<MemberSettings>): MemberSettings {
  return { ...withDefaults(stored, patch, memberDefaults), admin_state_up: adminStateOf(patch.admin_state_up, stored.admin_state_up) };
}

export interface MemberKey {
  readonly address: string;
  readonly protocol_port: number;
}

const keyOf = (m: MemberKey) => `${m.address}\u0000${m.protocol_port}`;

export interface BatchPlan<Existing extends MemberKey, Wanted extends MemberKey> {
  create: Wanted[];
  update: Array<{ existing: Existing; wanted: Wanted }>;
  remove: Existing[];
}

/**
 * Matches the wanted member list against the pool's members by (address, protocol_port).
 * Members not listed are removed unless `additiveOnly`.
 */
export function planMemberBatch<Existing extends MemberKey, Wanted extends MemberKey>(
  existing: readonly Existing[],
  wanted: readonly Wanted[],
  additiveOnly: boolean,
): BatchPlan<Existing, Wanted> {
  const wantedKeys = new Set<string>();
  for (const w of wanted) {
    const key = keyOf(w);
    if (wantedKeys.has(key)) throw apiError('VALIDATION', 'Member must be updated only once in the same request.');
    wantedKeys.add(key);
  }
  const byKey = new Map(existing.map((e) => [keyOf(e), e]));
  const plan: BatchPlan<Existing, Wanted> = { create: [], update: [], remove: [] };
  for (const w of wanted) {
    const match = byKey.get(keyOf(w));
    if (match) plan.update.push({ existing: match, wanted: w });
    else plan.create.push(w);
  }
  if (!additiveOnly) plan.remove = existing.filter((e) => !wantedKeys.has(keyOf(e)));
  return plan;
}
