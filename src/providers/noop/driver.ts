/** The noop provider: objects go ACTIVE without a data plane, like Octavia's no-op driver. */
import type { JobHook, ProviderDriver } from '../../provider-contract/provider.js';
import { acceptAnyData, noopAvailabilityZoneCapabilities, noopChecks, noopFlavorCapabilities } from './capabilities.js';
import { noopFlow } from './flows.js';

/** Octavia's own functional tests enable `noop_driver` under this text (tests/functional/api/v2/base.py). */
const NOOP_DESCRIPTION = 'NoOp driver.';

export function noopDriver(jobHook?: JobHook): ProviderDriver {
  return {
    name: 'noop',
    description: NOOP_DESCRIPTION,
    flavorCapabilities: () => noopFlavorCapabilities,
    availabilityZoneCapabilities: () => noopAvailabilityZoneCapabilities,
    validateFlavorData: acceptAnyData,
    validateAvailabilityZoneData: acceptAnyData,
    checks: noopChecks,
    flow: () => noopFlow,
    jobHook,
  };
}
