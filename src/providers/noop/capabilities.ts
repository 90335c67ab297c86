/** noop accepts every option the API accepts: it is the reference for API-only tests. */
import type { Capability, ProviderChecks } from '../driver.js';
import { apiError } from '../../domain/errors.js';

export const noopFlavorCapabilities: readonly Capability[] = [
  { name: 'loadbalancer_topology', description: 'Accepted and ignored: noop builds no data plane.' },
];

export const noopChecks: ProviderChecks = {};

/** Flavor and AZ data must name only keys noop knows, so typos surface at once. */
export function validateNoopData(kind: string) {
  const known = new Set(noopFlavorCapabilities.map((c) => c.name));
  return (data: Record<string, unknown>): void => {
    const extra = Object.keys(data).filter((k) => kind !== 'flavor' || !known.has(k));
    if (extra.length)
      throw apiError('PROVIDER_UNSUPPORTED_OPTION', 'noop', `Additional properties are not allowed (${extra.map((k) => `'${k}'`).join(', ')} ${extra.length > 1 ? 'were' : 'was'} unexpected)`);
  };
}
