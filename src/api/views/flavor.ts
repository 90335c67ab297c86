/** Flavor and flavor profile rows → the wire form. */
import type { FlavorProfileRecord } from '../../db/records/catalog.js';
import { catalogCodec, type FlavorRow } from '../../db/records/catalog.js';

export function flavorView(row: FlavorRow) {
  return { id: row.id, name: row.name, description: row.description, enabled: catalogCodec.decode(row).enabled, flavor_profile_id: row.flavor_profile_id };
}

/** flavor_data stays the JSON string it was given: clients send and read a string. */
export function flavorProfileView(row: FlavorProfileRecord) {
  return { id: row.id, name: row.name, provider_name: row.provider_name, flavor_data: row.flavor_data };
}
