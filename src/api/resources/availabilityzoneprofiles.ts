/** /lbaas/availabilityzoneprofiles (admin): the profile routes with availability zone data. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import type { AvailabilityZoneProfileTable } from '../../db/schema.js';
import { AvailabilityZoneProfileCreateBody, AvailabilityZoneProfileUpdateBody } from '../../domain/schemas/availabilityzone.js';
import { availabilityZoneProfileView } from '../views/availabilityzone.js';
import { profileRoutes, type ProfileKind } from './flavorprofiles.js';

export const availabilityZoneProfileKind: ProfileKind<AvailabilityZoneProfileTable> = {
  path: '/availabilityzoneprofiles',
  table: 'availability_zone_profile',
  dataKey: 'availability_zone_data',
  policy: 'availability-zone-profile',
  notFoundLabel: 'Availability Zone Profile',
  inUseLabel: 'Availability Zone Profile',
  root: 'availability_zone_profile',
  plural: 'availability_zone_profiles',
  // Singular on purpose: Octavia's key, which clients read.
  linksKey: 'availability_zone_profile_links',
  usedBy: { table: 'availability_zone', column: 'availability_zone_profile_id' },
  createBody: AvailabilityZoneProfileCreateBody,
  updateBody: AvailabilityZoneProfileUpdateBody,
  validate: (driver, data) => driver.validateAvailabilityZoneData(data),
  view: availabilityZoneProfileView,
};

export const availabilityZoneProfileRoutes = (deps: ApiDeps): FastifyPluginAsync => profileRoutes(deps, availabilityZoneProfileKind);
