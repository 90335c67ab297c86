/** Request bodies of flavors and flavor profiles. */
import { Type, Nullable, Patch, Strict, Str, Uuid } from '../schema-kit.js';

/** Profile data travels as a JSON document inside a string, at most 4096 characters. */
export const ProfileData = () => Str(4096);

export const FlavorCreateBody = Strict({
  flavor: Strict({
    name: Str(),
    description: Type.Optional(Nullable(Str())),
    enabled: Type.Optional(Type.Boolean()),
    flavor_profile_id: Uuid(),
  }),
});

export const FlavorUpdateBody = Strict({
  flavor: Patch({ name: Str(), description: Nullable(Str()), enabled: Type.Boolean() }),
});

export const FlavorProfileCreateBody = Strict({
  flavorprofile: Strict({ name: Str(), provider_name: Str(), flavor_data: ProfileData() }),
});

/** Nullable so the handler can refuse a null with Octavia's own "None is not a valid option" wording. */
export const FlavorProfileUpdateBody = Strict({
  flavorprofile: Patch({ name: Nullable(Str()), provider_name: Nullable(Str()), flavor_data: Nullable(ProfileData()) }),
});
