/** The JSON bodies of the Keystone v3 subset, shaped field for field like real Keystone's. */
import type { CatalogService } from './catalog.js';
import { DEFAULT_DOMAIN, type Directory, type Domain, type Project, type Role, type RoleAssignment, type User } from './directory.js';
import { roleId } from './roles.js';
import type { TokenClaims } from './tokens.js';

/** Keystone's `2026-12-01T08:48:05.000000Z`: microseconds, always UTC. */
export function keystoneTime(d: Date): string {
  return d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** `v3`: the URL of the v3 API, e.g. `http://host:9876/identity/v3`. */
export function versionView(v3: string) {
  return {
    id: 'v3.14',
    status: 'stable',
    updated: '2020-04-07T00:00:00Z',
    links: [{ rel: 'self', href: `${v3}/` }],
    'media-types': [{ base: 'application/json', type: 'application/vnd.openstack.identity-v3+json' }],
  };
}

const domainRef = (d: Domain = DEFAULT_DOMAIN) => ({ id: d.id, name: d.name });

/** Unscoped tokens have no project, roles or catalog, as in Keystone. `catalog` null: `?nocatalog`. */
export function tokenView(claims: TokenClaims, user: User, project: Project | null, catalog: readonly CatalogService[] | null) {
  return {
    token: {
      methods: claims.methods,
      user: { id: user.id, name: user.name, domain: domainRef(), password_expires_at: null },
      audit_ids: claims.auditIds,
      expires_at: keystoneTime(claims.expiresAt),
      issued_at: keystoneTime(claims.issuedAt),
      ...(project && {
        project: { id: project.id, name: project.name, domain: domainRef() },
        is_domain: false,
        roles: claims.roles.map((name) => ({ id: roleId(name), name })),
        ...(catalog && { catalog }),
      }),
    },
  };
}

export function projectView(p: Project, v3: string) {
  return {
    id: p.id,
    name: p.name,
    domain_id: DEFAULT_DOMAIN.id,
    description: p.description,
    enabled: true,
    parent_id: DEFAULT_DOMAIN.id,
    is_domain: false,
    tags: [],
    options: {},
    links: { self: `${v3}/projects/${p.id}` },
  };
}

export function userView(u: User, v3: string) {
  return {
    id: u.id,
    name: u.name,
    domain_id: DEFAULT_DOMAIN.id,
    enabled: true,
    password_expires_at: null,
    options: {},
    links: { self: `${v3}/users/${u.id}` },
  };
}

export function roleView(r: Role, v3: string) {
  return { id: r.id, name: r.name, domain_id: null, description: null, options: {}, links: { self: `${v3}/roles/${r.id}` } };
}

export function domainView(d: Domain, v3: string) {
  return {
    id: d.id,
    name: d.name,
    description: 'The default domain',
    enabled: true,
    tags: [],
    options: {},
    links: { self: `${v3}/domains/${d.id}` },
  };
}

export function assignmentView(a: RoleAssignment, directory: Directory, v3: string, includeNames: boolean) {
  const named = (name: string | undefined, withDomain: boolean) => (includeNames ? { name, ...(withDomain && { domain: domainRef() }) } : {});
  return {
    role: { id: a.roleId, ...named(directory.role(a.roleId)?.name, false) },
    user: { id: a.userId, ...named(directory.user(a.userId)?.name, true) },
    scope: { project: { id: a.projectId, ...named(directory.project(a.projectId)?.name, true) } },
    links: { assignment: `${v3}/projects/${a.projectId}/users/${a.userId}/roles/${a.roleId}` },
  };
}

/** A collection: `{"<key>": [...], "links": {...}}`; everything fits in one page. */
export function listView<K extends string, T>(key: K, items: T[], self: string) {
  return { [key]: items, links: { self, previous: null, next: null } } as Record<K, T[]> & {
    links: { self: string; previous: null; next: null };
  };
}
