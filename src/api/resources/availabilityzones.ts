/** /lbaas/availabilityzones: the catalog routes keyed by name, bound to an AZ profile. */
import type { FastifyPluginAsync } from 'fastify';
import type { ApiDeps } from '../context.js';
import type { AvailabilityZoneTable } from '../../db/schema.js';
import { AvailabilityZoneCreateBody, AvailabilityZoneUpdateBody } from '../../domain/schemas/availabilityzone.js';
import { availabilityZoneView } from '../views/availabilityzone.js';
import { catalogRoutes, type CatalogKind } from './flavors.js';

export const availabilityZoneKind: CatalogKind<AvailabilityZoneTable> = {
  path: '/availabilityzones',
  table: 'availability_zone',
  key: 'name',
  policy: 'availability-zone',
  label: 'Availability Zone',
  // Octavia's grammar, verbatim.
  duplicateLabel: 'availability zone',
  root: 'availability_zone',
  plural: 'availability_zones',
  linksKey: 'availability_zones_links',
  profile: { table: 'availability_zone_profile', column: 'availability_zone_profile_id' },
  loadBalancerColumn: 'availability_zone',
  attributes: {
    name: { column: 'name', kind: 'string' },
    description: { column: 'description', kind: 'string' },
    enabled: { column: 'enabled', kind: 'bool' },
    availability_zone_profile_id: { column: 'availability_zone_profile_id', kind: 'uuid' },
  },
  createBody: AvailabilityZoneCreateBody,
  updateBody: AvailabilityZoneUpdateBody,
  view: availabilityZoneView,
};

export const availabilityZoneRoutes = (deps: ApiDeps): FastifyPluginAsync => catalogRoutes(deps, availabilityZoneKind);
