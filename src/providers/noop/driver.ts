/** The noop provider: objects go ACTIVE without a data plane, like Octavia's no-op driver. */
import type { ProviderDriver } from '../driver.js';
import { noopChecks, noopFlavorCapabilities, validateNoopData } from './capabilities.js';
import { noopFlow } from './flows.js';

export function noopDriver(): ProviderDriver {
  return {
    name: 'noop',
    description: 'The Ostia no-op provider: API objects only, no data plane.',
    flavorCapabilities: () => noopFlavorCapabilities,
    availabilityZoneCapabilities: () => [],
    validateFlavorData: validateNoopData('flavor'),
    validateAvailabilityZoneData: validateNoopData('availability zone'),
    checks: noopChecks,
    flow: () => noopFlow,
  };
}
