/** Every resource plugin of the API: lbaas ones are mounted with and without `lbaas/`. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { loadBalancerRoutes } from './loadbalancers.js';
import { loadBalancerStatusRoutes } from './loadbalancer-status.js';
import { quotaRoutes } from './quotas.js';
import { providerRoutes } from './providers.js';
import { flavorRoutes } from './flavors.js';
import { flavorProfileRoutes } from './flavorprofiles.js';
import { availabilityZoneRoutes } from './availabilityzones.js';
import { availabilityZoneProfileRoutes } from './availabilityzoneprofiles.js';
import { amphoraRoutes } from './amphorae.js';
import { healthMonitorRoutes } from './healthmonitors.js';
import { l7PolicyRoutes } from './l7policies.js';
import { l7RuleRoutes } from './l7rules.js';
import { listenerRoutes } from './listeners.js';
import { poolRoutes } from './pools.js';
import { memberRoutes } from './members.js';
import { ostiaExtensionRoutes } from './ostia-extensions.js';
import { loadBalancerEventRoutes, projectEventRoutes } from './status-events.js';

type Plugin = (deps: ApiDeps) => FastifyPluginAsync;

export const resourcePlugins: readonly Plugin[] = [loadBalancerRoutes, loadBalancerStatusRoutes, loadBalancerEventRoutes, quotaRoutes, providerRoutes, flavorRoutes, flavorProfileRoutes, availabilityZoneRoutes, availabilityZoneProfileRoutes, healthMonitorRoutes, l7PolicyRoutes, l7RuleRoutes, listenerRoutes, poolRoutes, memberRoutes];

/** Mounted under /v2[.0]/octavia (admin amphora API). */
export const octaviaPlugins: readonly Plugin[] = [amphoraRoutes];

/** Mounted under /v2[.0]/ostia: Ostia's own extensions, which Octavia does not have. */
export const ostiaPlugins: readonly Plugin[] = [ostiaExtensionRoutes, projectEventRoutes];
