/** The amphora provider: HAProxy amphorae on this machine, built and configured by the flows. */
import type { ProviderDriver } from '../driver.js';
import {
  amphoraAvailabilityZoneCapabilities, amphoraChecks, amphoraFlavorCapabilities, PROVIDER, validateAmphoraAvailabilityZoneData, validateAmphoraFlavorData,
} from './capabilities.js';
import type { AmphoraDepsLoader } from './deps.js';
import { amphoraFlows } from './flows.js';

export function amphoraDriver(load: AmphoraDepsLoader): ProviderDriver {
  return {
    name: PROVIDER,
    description: 'The Ostia amphora driver: HAProxy amphorae with a management agent, on this machine.',
    flavorCapabilities: () => amphoraFlavorCapabilities,
    availabilityZoneCapabilities: () => amphoraAvailabilityZoneCapabilities,
    validateFlavorData: validateAmphoraFlavorData,
    validateAvailabilityZoneData: validateAmphoraAvailabilityZoneData,
    checks: amphoraChecks,
    flow: amphoraFlows(load),
  };
}
