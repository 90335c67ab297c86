/** The amphora provider: HAProxy amphorae on this machine, built and configured by the flows. */
import type { ProviderDriver } from '../driver.js';
import {
  amphoraAvailabilityZoneCapabilities, amphoraChecks, amphoraFlavorCapabilities, PROVIDER, validateAmphoraAvailabilityZoneData, validateAmphoraFlavorData,
} from './capabilities.js';
import type { AmphoraDepsLoader } from './deps.js';
import { amphoraFlows } from './flows.js';

/** Octavia's text for its amphora provider (octavia/common/config.py, enabled_provider_drivers). */
export const AMPHORA_DESCRIPTION = 'The Octavia Amphora driver.';

export function amphoraDriver(load: AmphoraDepsLoader): ProviderDriver {
  return {
    name: PROVIDER,
    description: AMPHORA_DESCRIPTION,
    flavorCapabilities: () => amphoraFlavorCapabilities,
    availabilityZoneCapabilities: () => amphoraAvailabilityZoneCapabilities,
    validateFlavorData: validateAmphoraFlavorData,
    validateAvailabilityZoneData: validateAmphoraAvailabilityZoneData,
    checks: amphoraChecks,
    flow: amphoraFlows(load),
  };
}
