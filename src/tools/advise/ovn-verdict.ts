/**
 * The OVN provider's own answer to one request: its checks are run, and a refusal is looked up in
 * its capability table, so the advice carries the provider's words and stays true when the table
 * changes.
 */
import { isApiError } from '../../domain/errors.js';
import type { Unsupported } from '../../providers/capability-table.js';
import { ovnCapabilities } from '../../providers/ovn/capabilities.js';

const refusals = ovnCapabilities.unsupported();

/**
 * Runs `check` (one of the provider's checks); null when it passes, else the table's entry for the
 * refusal. `scope` is the resource checked (e.g. `pool`): one text may be refused for several
 * features (the protocol refusal is the listener's and the pool's).
 */
export function ovnRefusal(scope: string, check: () => void): Unsupported | null {
  try {
    check();
    return null;
  } catch (e) {
    if (!isApiError(e) || (e.code !== 'PROVIDER_UNSUPPORTED_OPTION' && e.code !== 'PROVIDER_NOT_IMPLEMENTED')) throw e;
    const entry = refusals.find((u) => (u.feature === scope || u.feature.startsWith(`${scope}.`)) && e.message.endsWith(`: ${u.reason}`));
    if (!entry) throw new Error(`the OVN provider refused with words its capability table does not hold: ${e.message}`);
    return entry;
  }
}

/** The table's answer to `value` for `feature` (e.g. `pool.lb_algorithm`, `ROUND_ROBIN`). */
export const askOvn = (feature: string, value: string): Unsupported | null => ovnRefusal(feature, () => ovnCapabilities.requireSupported(feature, value));
