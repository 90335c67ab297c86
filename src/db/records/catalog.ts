/** The operator's catalog: flavors and availability zones, each with the profile that holds its provider's data. */
import { codec, type Row } from './codec.js';

export interface FlavorProfileRecord {
  id: string;
  name: string;
  provider_name: string;
  /** The provider's options, as the operator wrote them (JSON text, kept verbatim). */
  flavor_data: string;
}

export interface FlavorRecord {
  id: string;
  name: string;
  description: string;
  enabled: boolean;
  flavor_profile_id: string;
}

export interface AvailabilityZoneProfileRecord {
  id: string;
  name: string;
  provider_name: string;
  /** As flavor_data. */
  availability_zone_data: string;
}

export interface AvailabilityZoneRecord {
  name: string;
  description: string;
  enabled: boolean;
  availability_zone_profile_id: string;
}

export type FlavorRow = Row<FlavorRecord>;
export type AvailabilityZoneRow = Row<AvailabilityZoneRecord>;

/** Flavors and availability zones store only `enabled` differently, so one codec serves both. */
export const catalogCodec = codec<Pick<FlavorRecord & AvailabilityZoneRecord, 'enabled'>>({ enabled: 'bool' });
