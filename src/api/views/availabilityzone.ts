/** Availability zone and AZ profile rows → the wire form. */
import { catalogCodec, type AvailabilityZoneProfileRecord, type AvailabilityZoneRow } from '../../db/records/catalog.js';

export function availabilityZoneView(row: AvailabilityZoneRow) {
  return { name: row.name, description: row.description, enabled: catalogCodec.decode(row).enabled, availability_zone_profile_id: row.availability_zone_profile_id };
}

export function availabilityZoneProfileView(row: AvailabilityZoneProfileRecord) {
  return { id: row.id, name: row.name, provider_name: row.provider_name, availability_zone_data: row.availability_zone_data };
}
