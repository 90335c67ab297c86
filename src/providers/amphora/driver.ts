/** The amphora provider: HAProxy amphorae on this machine, built and configured by the flows. */
import type { Config } from '../../config.js';
import type { JobHook, ProviderDriver } from '../../provider-contract/provider.js';
import {
  amphoraAvailabilityZoneCapabilities, amphoraChecks, buildsPairs, amphoraFlavorCapabilities, PROVIDER, validateAmphoraAvailabilityZoneData, validateAmphoraFlavorData,
} from './capabilities.js';
import type { AmphoraDepsLoader } from './deps.js';
import { amphoraFlows } from './flows.js';
import type { MoveDeps } from '../provider-moves.js';

/** Octavia's text for its amphora provider (octavia/common/config.py, enabled_provider_drivers). */
export const AMPHORA_DESCRIPTION = 'The Octavia Amphora driver.';
/** Appended under compute.driver noop, so no client is told a data plane exists. No comma: tools split descriptions on commas. */
export const NOOP_COMPUTE_DESCRIPTION_SUFFIX = ' (test mode: no-op compute and amphora drivers; no data plane)';

export function amphoraDriver(load: AmphoraDepsLoader, compute: Config['compute']['driver'] = 'local', jobHook?: JobHook, moves: MoveDeps = {}): ProviderDriver {
  const noop = compute === 'noop';
  return {
    name: PROVIDER,
    description: AMPHORA_DESCRIPTION + (noop ? NOOP_COMPUTE_DESCRIPTION_SUFFIX : ''),
    flavorCapabilities: () => amphoraFlavorCapabilities,
    availabilityZoneCapabilities: () => amphoraAvailabilityZoneCapabilities,
    validateFlavorData: (data) => validateAmphoraFlavorData(data, buildsPairs(compute)),
    validateAvailabilityZoneData: validateAmphoraAvailabilityZoneData,
    checks: amphoraChecks(compute),
    flow: amphoraFlows(load, moves),
    jobHook,
  };
}
