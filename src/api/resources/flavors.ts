/** /lbaas/flavors: the catalog routes keyed by a generated id, bound to a flavor profile. */
import type { FlavorRow } from '../../db/records/catalog.js';
import { FlavorCreateBody, FlavorUpdateBody } from '../../domain/schemas/flavor.js';
import { catalogRoutes } from '../catalog-routes.js';
import { flavorView } from '../views/flavor.js';

export const flavorRoutes = catalogRoutes<FlavorRow>({
  path: '/flavors', table: 'flavor', key: 'id', policy: 'flavor', loadBalancerColumn: 'flavor_id',
  label: 'Flavor',
  createBody: FlavorCreateBody, updateBody: FlavorUpdateBody, view: flavorView,
});
