/** Every resource plugin of the API: lbaas ones are mounted with and without `lbaas/`. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import { loadBalancerRoutes } from './loadbalancers.js';

type Plugin = (deps: ApiDeps) => FastifyPluginAsync;

export const resourcePlugins: readonly Plugin[] = [loadBalancerRoutes];

/** Mounted under /v2[.0]/octavia (admin amphora API). */
export const octaviaPlugins: readonly Plugin[] = [];
