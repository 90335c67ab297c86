/**
 * Who exists: projects, users and role assignments as the configuration declares them. There
 * is one domain, Keystone's `default`, so every lookup by name is in that domain.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { ConfigError, type Config } from '../config.js';
import { KNOWN_ROLES, roleId, withImpliedRoles } from './roles.js';

export interface Domain {
  readonly id: string;
  readonly name: string;
}

export const DEFAULT_DOMAIN: Domain = { id: 'default', name: 'Default' };

export interface Project {
  readonly id: string;
  readonly name: string;
  readonly description: string;
}

export interface User {
  readonly id: string;
  readonly name: string;
}

export interface Role {
  readonly id: string;
  readonly name: string;
}

/** A direct grant of a role to a user on a project, as configured (no implied roles). */
export interface RoleAssignment {
  readonly userId: string;
  readonly projectId: string;
  readonly roleId: string;
}

/** How requests name a domain: by id or by name. */
export interface DomainRef {
  readonly id?: string;
  readonly name?: string;
}

type IdentityConfig = Pick<Config['identity'], 'projects' | 'users'>;

export class Directory {
  readonly projects: readonly Project[];
  readonly users: readonly User[];
  readonly roles: readonly Role[];
  readonly assignments: readonly RoleAssignment[];
  private readonly passwords: ReadonlyMap<string, Buffer>;

  constructor(config: IdentityConfig) {
    this.projects = config.projects.map(({ id, name, description }) => ({ id, name, description }));
    this.users = config.users.map(({ id, name }) => ({ id, name }));
    unique('identity.projects', this.projects);
    unique('identity.users', this.users);
    this.passwords = new Map(config.users.map((u) => [u.id, digest(u.password)]));

    const roleNames = new Set<string>(KNOWN_ROLES);
    const assignments: RoleAssignment[] = [];
    for (const user of config.users) {
      for (const [projectName, names] of Object.entries(user.roles)) {
        const project = this.projects.find((p) => p.name === projectName);
        if (!project) throw new ConfigError(`identity.users '${user.name}' has roles on unknown project '${projectName}'`);
        for (const name of names) {
          roleNames.add(name);
          assignments.push({ userId: user.id, projectId: project.id, roleId: roleId(name) });
        }
      }
    }
    this.roles = [...roleNames].map((name) => ({ id: roleId(name), name }));
    this.assignments = assignments;
  }

  /** Names match case-insensitively, as Keystone on MySQL does: many configs say `default`. */
  domain(ref: DomainRef): Domain | undefined {
    const matches =
      (ref.id === undefined || ref.id === DEFAULT_DOMAIN.id) && (ref.name === undefined || ref.name.toLowerCase() === DEFAULT_DOMAIN.name.toLowerCase());
    return matches && (ref.id !== undefined || ref.name !== undefined) ? DEFAULT_DOMAIN : undefined;
  }

  project(id: string): Project | undefined {
    return this.projects.find((p) => p.id === id);
  }

  projectByName(name: string, domain: DomainRef): Project | undefined {
    return this.domain(domain) && this.projects.find((p) => p.name === name);
  }

  user(id: string): User | undefined {
    return this.users.find((u) => u.id === id);
  }

  userByName(name: string, domain: DomainRef): User | undefined {
    return this.domain(domain) && this.users.find((u) => u.name === name);
  }

  role(id: string): Role | undefined {
    return this.roles.find((r) => r.id === id);
  }

  /** Role names a token of this user scoped to this project carries, implied roles included. */
  rolesOn(userId: string, projectId: string): string[] {
    const direct = this.assignments.filter((a) => a.userId === userId && a.projectId === projectId).map((a) => this.role(a.roleId)!.name);
    return withImpliedRoles(direct);
  }

  /** Projects the user holds at least one role on. */
  projectsOf(userId: string): Project[] {
    const ids = new Set(this.assignments.filter((a) => a.userId === userId).map((a) => a.projectId));
    return this.projects.filter((p) => ids.has(p.id));
  }

  checkPassword(userId: string, password: string): boolean {
    const expected = this.passwords.get(userId);
    // Comparing fixed-length digests keeps the comparison constant-time whatever the lengths.
    return expected !== undefined && timingSafeEqual(expected, digest(password));
  }
}

function digest(s: string): Buffer {
  return createHash('sha256').update(s).digest();
}

function unique(path: string, items: ReadonlyArray<{ id: string; name: string }>): void {
  for (const key of ['id', 'name'] as const) {
    const seen = new Set<string>();
    for (const item of items) {
      if (seen.has(item[key])) throw new ConfigError(`${path}: duplicate ${key} '${item[key]}'`);
      seen.add(item[key]);
    }
  }
}
