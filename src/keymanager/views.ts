/** Barbican's JSON shapes for secrets, containers, ACLs and consumers (v1, microversion 1.0). */
import type { AclRecord, ConsumerRow, ContainerRow, MemberRow, SecretRow } from './store.js';

type Obj = Record<string, unknown>;

export function secretRef(base: string, id: string): string {
  return `${base}/secrets/${id}`;
}

export function containerRef(base: string, id: string): string {
  return `${base}/containers/${id}`;
}

/** Metadata only; `content_types` appears once a payload is stored, as in Barbican. */
export function secretView(base: string, s: SecretRow): Obj {
  return {
    created: s.created_at,
    updated: s.updated_at,
    status: 'ACTIVE',
    secret_ref: secretRef(base, s.id),
    name: s.name,
    secret_type: s.secret_type,
    expiration: s.expiration,
    algorithm: s.algorithm,
    bit_length: s.bit_length,
    mode: s.mode,
    creator_id: s.creator_id,
    ...(s.content_type && { content_types: { default: s.content_type } }),
  };
}

export function secretConsumerView(c: ConsumerRow): Obj {
  return { service: c.service, resource_type: c.resource_type, resource_id: c.resource_id, created: c.created_at, updated: c.created_at, status: 'ACTIVE' };
}

/** The `URL` a service's registration gets on a container: `<resource type>/<resource id>`. */
export function containerConsumerUrl(c: { resourceType: string; resourceId: string }): string {
  return `${c.resourceType}/${c.resourceId}`;
}

/** Container consumers are Barbican's older `{name, URL}` pairs: stored as service and resource id. */
export function containerConsumerView(c: ConsumerRow): Obj {
  return { name: c.service, URL: c.resource_id, created: c.created_at, updated: c.created_at, status: 'ACTIVE' };
}

export function containerView(base: string, c: ContainerRow, members: readonly MemberRow[], consumers: readonly ConsumerRow[]): Obj {
  return {
    created: c.created_at,
    updated: c.updated_at,
    status: 'ACTIVE',
    container_ref: containerRef(base, c.id),
    name: c.name,
    type: c.type,
    creator_id: c.creator_id,
    secret_refs: members.map((m) => ({ name: m.name, secret_ref: secretRef(base, m.secret_id) })),
    consumers: consumers.map((k) => ({ name: k.service, URL: k.resource_id })),
  };
}

export function aclView(acl: AclRecord | undefined): Obj {
  if (!acl) return { read: { 'project-access': true } };
  return { read: { 'project-access': acl.project_access, users: acl.users, created: acl.created_at, updated: acl.updated_at } };
}

/** `previous` / `next` links of a page, carrying the other query parameters along. */
export function pageLinks(base: string, collection: string, offset: number, limit: number, total: number, query: string): Obj {
  const href = (o: number) => `${base}/${collection}?limit=${limit}&offset=${o}${query ? `&${query}` : ''}`;
  return {
    ...(offset > 0 && { previous: href(Math.max(0, offset - limit)) }),
    ...(total > offset + limit && { next: href(offset + limit) }),
  };
}
