/** Flavor and flavor profile rows → the wire form. */
import type { FlavorProfileTable, FlavorTable } from '../../db/schema.js';

export function flavorView(row: FlavorTable) {
  return { id: row.id, name: row.name, description: row.description, enabled: row.enabled === 1, flavor_profile_id: row.flavor_profile_id };
}

/** flavor_data stays the JSON string it was given: clients send and read a string. */
export function flavorProfileView(row: FlavorProfileTable) {
  return { id: row.id, name: row.name, provider_name: row.provider_name, flavor_data: row.flavor_data };
}
