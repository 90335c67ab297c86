/**
 * noop accepts every option the API accepts: it is the reference for API-only tests. Like
 * Octavia's no-op driver (octavia/api/drivers/noop_driver/driver.py) it takes any flavor and
 * availability zone metadata, and lists the same capabilities with the same words.
 */
import type { Capability, ProviderChecks } from '../../provider-contract/provider.js';
import { capabilityTable } from '../capability-table.js';

/** No row: noop refuses no value of any feature, so a conformance suite skips nothing for it. */
export const noopCapabilities = capabilityTable('noop', []);

export const noopFlavorCapabilities: readonly Capability[] = [
  { name: 'amp_image_tag', description: 'The glance image tag to use for this load balancer.' },
];

export const noopAvailabilityZoneCapabilities: readonly Capability[] = [
  { name: 'compute_zone', description: 'The compute availability zone to use for this loadbalancer.' },
];

export const noopChecks: ProviderChecks = {};

/** Octavia's no-op driver records the metadata and refuses none of it. */
export function acceptAnyData(_data: Record<string, unknown>): void {}
