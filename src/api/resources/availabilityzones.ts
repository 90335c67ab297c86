/** /lbaas/availabilityzones: the catalog routes keyed by name, bound to an AZ profile. */
import type { AvailabilityZoneRow } from '../../db/records/catalog.js';
import { AvailabilityZoneCreateBody, AvailabilityZoneUpdateBody } from '../../domain/schemas/availabilityzone.js';
import { catalogRoutes } from '../catalog-routes.js';
import { availabilityZoneView } from '../views/availabilityzone.js';

export const availabilityZoneRoutes = catalogRoutes<AvailabilityZoneRow>({
  path: '/availabilityzones', table: 'availability_zone', key: 'name', policy: 'availability-zone', loadBalancerColumn: 'availability_zone',
  label: 'Availability Zone',
  createBody: AvailabilityZoneCreateBody, updateBody: AvailabilityZoneUpdateBody, view: availabilityZoneView,
});
