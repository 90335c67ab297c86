/** Availability zone and AZ profile rows → the wire form. */
import type { AvailabilityZoneProfileTable, AvailabilityZoneTable } from '../../db/schema.js';

export function availabilityZoneView(row: AvailabilityZoneTable) {
  return { name: row.name, description: row.description, enabled: row.enabled === 1, availability_zone_profile_id: row.availability_zone_profile_id };
}

export function availabilityZoneProfileView(row: AvailabilityZoneProfileTable) {
  return { id: row.id, name: row.name, provider_name: row.provider_name, availability_zone_data: row.availability_zone_data };
}
