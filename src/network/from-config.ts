/** The network service `network.driver` names: the configured catalog, or `noop` in front of it. */
import type { Config } from '../config.js';
import type { NetworkCatalog } from './catalog.js';
import { NoopNetworkService } from './noop-network/noop-network.js';
import { CatalogNetworkService, type NetworkService } from './service.js';

export function networkService(config: Config['network'], catalog: NetworkCatalog): NetworkService {
  const configured = new CatalogNetworkService(catalog);
  return config.driver === 'noop' ? new NoopNetworkService(configured) : configured;
}
