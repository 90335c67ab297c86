/** /lbaas/flavorprofiles (admin): the profile routes with flavor data. */
import type { FlavorProfileRecord } from '../../db/records/catalog.js';
import { FlavorProfileCreateBody, FlavorProfileUpdateBody } from '../../domain/schemas/flavor.js';
import { profileRoutes } from '../catalog-routes.js';
import { flavorProfileView } from '../views/flavor.js';

export const flavorProfileRoutes = profileRoutes<FlavorProfileRecord>({
  path: '/flavorprofiles', catalog: 'flavor', root: 'flavorprofile', policy: 'flavor-profile',
  notFoundLabel: 'Flavor Profile', inUseLabel: 'Flavor profile',
  createBody: FlavorProfileCreateBody, updateBody: FlavorProfileUpdateBody, view: flavorProfileView,
  validate: (driver, data) => driver.validateFlavorData(data),
});
