/**
 * Who may do what with a secret or container: Barbican's default policy (the "new defaults" of
 * barbican/common/policies, enforce_new_defaults = True), and what a reference to this key
 * manager looks like.
 *
 * - create and list: the member role, in the caller's own project;
 * - manage (update, delete, change ACLs): an admin of the owning project, or a member of it
 *   who created the entity or for whom it is not private (`project-access` true, the default);
 * - read (payload, container, consumers): whoever may manage it, plus users in its read ACL;
 * - secret metadata and secret deletion also to the admin role of any project (`role:admin`
 *   in Barbican's `secret:get`/`secret:delete`), which never extends to payloads.
 * The reader role alone grants nothing: Barbican's defaults require member.
 */
import { ForeignReferenceError } from './errors.js';

export interface Identity {
  readonly projectId: string | null;
  readonly userId: string | null;
  readonly roles: readonly string[];
}

/** A `read` ACL; absent means Barbican's implicit `{"project-access": true}`. */
export interface ReadAcl {
  readonly projectAccess: boolean;
  readonly users: readonly string[];
}

export interface Guarded {
  readonly projectId: string;
  readonly creatorId: string | null;
  readonly acl: ReadAcl | null;
}

const has = (who: Identity, role: string) => who.roles.includes(role);

export function mayCreate(who: Identity): boolean {
  return who.projectId !== null && has(who, 'member');
}

export function mayManage(who: Identity, target: Guarded): boolean {
  if (who.projectId !== target.projectId) return false;
  if (has(who, 'admin')) return true;
  const owner = who.userId !== null && who.userId === target.creatorId;
  return has(who, 'member') && (owner || (target.acl?.projectAccess ?? true));
}

export function mayRead(who: Identity, target: Guarded): boolean {
  return mayManage(who, target) || (who.userId !== null && (target.acl?.users.includes(who.userId) ?? false));
}

/** Barbican's unscoped `role:admin` clause of `secret:get` and `secret:delete`. */
export function isAdminAnywhere(who: Identity): boolean {
  return has(who, 'admin');
}

export type EntityKind = 'secret' | 'container';

export interface ParsedRef {
  readonly kind: EntityKind;
  readonly id: string;
}

export const KEY_MANAGER_PREFIX = '/key-manager';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function isUuid(id: string): boolean {
  return UUID.test(id);
}

/** `<publicUrl>/key-manager/v1`: what every reference this key manager hands out starts with. */
export function refBase(publicUrl: string): string {
  return `${publicUrl.replace(/\/+$/, '')}${KEY_MANAGER_PREFIX}/v1`;
}

/**
 * A reference to a secret or container of THIS key manager: same origin and path prefix as
 * the refs it hands out, then `secrets/<uuid>` or `containers/<uuid>`. Anything else (another
 * Barbican, a bare uuid, an ACL or payload URL) is refused by name.
 */
export function parseRef(ref: string, publicUrl: string, only?: EntityKind): ParsedRef {
  const expected = `${refBase(publicUrl)}/${only ? `${only}s` : '(secrets|containers)'}/<uuid>`;
  const refuse = () => new ForeignReferenceError(`'${ref}' is not a reference to this key manager: expected ${expected}`);
  let url: URL;
  let base: URL;
  try {
    url = new URL(ref);
    base = new URL(refBase(publicUrl));
  } catch {
    throw refuse();
  }
  if (url.origin !== base.origin || url.search || url.hash || !url.pathname.startsWith(`${base.pathname}/`)) throw refuse();
  const [collection, id, ...rest] = url.pathname.slice(base.pathname.length + 1).split('/');
  const kind = collection === 'secrets' ? 'secret' : collection === 'containers' ? 'container' : null;
  if (!kind || !id || !isUuid(id) || rest.some((part) => part !== '') || (only && kind !== only)) throw refuse();
  return { kind, id };
}
