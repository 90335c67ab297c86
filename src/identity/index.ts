/** The identity module: embedded Keystone, external-Keystone validation, Octavia's RBAC. */
export { createAuthenticator, type Authenticator, type AuthenticatorDeps, type RequestHeaders } from './authenticate.js';
export { IDENTITY_PREFIX, identityUrl, serviceCatalog, type CatalogEndpoint, type CatalogService } from './catalog.js';
export { cloudsYaml } from './clouds-yaml.js';
export { DEFAULT_DOMAIN, Directory, type Domain, type Project, type Role, type RoleAssignment, type User } from './directory.js';
export { ExternalKeystone, type ExternalKeystoneDeps } from './external.js';
export { keystone, type KeystoneOptions } from './keystone.js';
export { allowed, authorize, canSeeAllProjects, type Action, type Resource } from './policy.js';
export { KNOWN_ROLES, roleId } from './roles.js';
export { TokenService, type IssuedToken, type TokenClaims, type TokenSubject } from './tokens.js';
