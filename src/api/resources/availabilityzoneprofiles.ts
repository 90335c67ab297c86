/** /lbaas/availabilityzoneprofiles (admin): the profile routes with availability zone data. */
import type { AvailabilityZoneProfileRecord } from '../../db/records/catalog.js';
import { AvailabilityZoneProfileCreateBody, AvailabilityZoneProfileUpdateBody } from '../../domain/schemas/availabilityzone.js';
import { profileRoutes } from '../catalog-routes.js';
import { availabilityZoneProfileView } from '../views/availabilityzone.js';

export const availabilityZoneProfileRoutes = profileRoutes<AvailabilityZoneProfileRecord>({
  path: '/availabilityzoneprofiles', catalog: 'availability_zone', root: 'availability_zone_profile', policy: 'availability-zone-profile',
  notFoundLabel: 'Availability Zone Profile', inUseLabel: 'Availability Zone Profile',
  createBody: AvailabilityZoneProfileCreateBody, updateBody: AvailabilityZoneProfileUpdateBody, view: availabilityZoneProfileView,
  validate: (driver, data) => driver.validateAvailabilityZoneData(data),
});
