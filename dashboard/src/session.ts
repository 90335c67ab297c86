/**
 * The login session: a Keystone token kept in this page's memory only (never in storage or a
 * cookie, so a reload or a closed tab logs out), its project and roles, and the projects the
 * user may switch to.
 */
import { signal, computed } from '@preact/signals';
import type { DashboardConfig } from './config.js';
import { allowed, type Action, type Resource } from '../../src/identity/policy.js';
import type { RequestContext } from '../../src/domain/context.js';
import { call, send } from './api.js';

export interface Project {
  id: string;
  name: string;
}

export interface Session {
  token: string;
  expiresAt: string;
  user: { id: string; name: string };
  project: Project;
  roles: string[];
  projects: Project[];
}

export const config = signal<DashboardConfig | null>(null);
export const session = signal<Session | null>(null);
/** Why the last session ended when it was not the user's doing (an expired token). */
export const endedBecause = signal<string | null>(null);

interface TokenBody {
  token: { expires_at: string; user: { id: string; name: string }; project?: Project; roles?: Array<{ name: string }> };
}

const identity = () => config.value!.identity;

async function issue(auth: unknown): Promise<{ token: string; body: TokenBody }> {
  const res = await send('POST', `${identity()}/auth/tokens?nocatalog`, { body: { auth }, token: null });
  return { token: res.headers.get('x-subject-token') ?? '', body: (await res.json()) as TokenBody };
}

async function projectsOf(token: string): Promise<Project[]> {
  const r = await call<{ projects: Project[] }>('GET', `${identity()}/auth/projects`, { token });
  return r.projects.map((p) => ({ id: p.id, name: p.name })).sort((a, b) => a.name.localeCompare(b.name));
}

async function scopedTo(token: string, project: Project, projects: Project[]): Promise<Session> {
  const scoped = await issue({ identity: { methods: ['token'], token: { id: token } }, scope: { project: { id: project.id } } });
  const t = scoped.body.token;
  return { token: scoped.token, expiresAt: t.expires_at, user: t.user, project: t.project ?? project, roles: (t.roles ?? []).map((r) => r.name), projects };
}

export class LoginError extends Error {}

/** Password login in the Default domain; without a project name, the user's first project. */
export async function login(user: string, password: string, projectName: string, domain = 'Default'): Promise<void> {
  const unscoped = await issue({ identity: { methods: ['password'], password: { user: { name: user, domain: { name: domain }, password } } } });
  const projects = await projectsOf(unscoped.token);
  const wanted = projectName.trim();
  const project = wanted ? projects.find((p) => p.name === wanted || p.id === wanted) : projects[0];
  if (!project) {
    throw new LoginError(
      wanted
        ? `${user} has no role in a project named ${wanted}; ${projects.length ? `their projects: ${projects.map((p) => p.name).join(', ')}` : 'ask an administrator for a role'}`
        : `${user} has no role in any project; ask an administrator for one`,
    );
  }
  endedBecause.value = null;
  session.value = await scopedTo(unscoped.token, project, projects);
}

export async function switchProject(projectId: string): Promise<void> {
  const s = session.value!;
  const project = s.projects.find((p) => p.id === projectId);
  if (!project) return;
  session.value = await scopedTo(s.token, project, s.projects);
}

export async function logout(): Promise<void> {
  const s = session.value;
  session.value = null;
  if (!s) return;
  // Revoke it at Keystone too; the page forgets it either way.
  await send('DELETE', `${identity()}/auth/tokens`, { token: s.token, headers: { 'x-subject-token': s.token } }).catch(() => undefined);
}

export function expire(reason: string): void {
  session.value = null;
  endedBecause.value = `Your session ended: ${reason} Log in again.`;
}

/** Whether the API's policy lets this session do `action` on `resource` (of `project`, default its own): buttons it forbids are not shown. */
export function can(resource: Resource, action: Action, project?: string | null): boolean {
  const s = session.value;
  const c = config.value;
  if (!s || !c) return false;
  const ctx: RequestContext = { userId: s.user.id, userName: s.user.name, projectId: s.project.id, roles: s.roles, isAdmin: false, policy: c.policy };
  return allowed(ctx, resource, action, project === undefined ? s.project.id : project);
}

/** Admin pages (amphorae, failovers, the operator tools' plan and advice). */
export const isAdmin = computed(() => session.value !== null && can('amphora', 'get_all'));
