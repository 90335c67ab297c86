/** Request bodies of availability zones and availability zone profiles. */
import { Type, Nullable, Patch, Strict, Str, Uuid } from '../schema-kit.js';
import { ProfileData } from './flavor.js';

export const AvailabilityZoneCreateBody = Strict({
  availability_zone: Strict({
    name: Str(),
    description: Type.Optional(Nullable(Str())),
    enabled: Type.Optional(Type.Boolean()),
    availability_zone_profile_id: Uuid(),
  }),
});

/** The name is the key and the profile is fixed: only these two change. */
export const AvailabilityZoneUpdateBody = Strict({
  availability_zone: Patch({ description: Nullable(Str()), enabled: Type.Boolean() }),
});

export const AvailabilityZoneProfileCreateBody = Strict({
  availability_zone_profile: Strict({ name: Str(), provider_name: Str(), availability_zone_data: ProfileData() }),
});

export const AvailabilityZoneProfileUpdateBody = Strict({
  availability_zone_profile: Patch({ name: Nullable(Str()), provider_name: Nullable(Str()), availability_zone_data: Nullable(ProfileData()) }),
});
