/** The frame of every page after login: navigation, the project switcher, the user and logout. */
import type { ComponentChildren } from 'preact';
import { useState } from 'preact/hooks';
import { isAdmin, logout, session, switchProject } from '../session.js';
import { href, route } from '../router.js';
import { ApiError } from '../api.js';
import { Notice } from './notice.js';

interface NavItem {
  path: string;
  label: string;
  admin?: boolean;
}

const NAV: NavItem[] = [
  { path: '/loadbalancers', label: 'Load balancers' },
  { path: '/certificates', label: 'Certificates' },
  { path: '/quotas', label: 'Quotas' },
  { path: '/amphorae', label: 'Amphorae', admin: true },
  { path: '/failovers', label: 'Failovers', admin: true },
  { path: '/operator', label: 'Capacity & advice', admin: true },
];

export function Layout({ children }: { children: ComponentChildren }) {
  const s = session.value!;
  const [error, setError] = useState<string | null>(null);
  const current = route.value.path;
  const onProject = async (e: Event) => {
    setError(null);
    try {
      await switchProject((e.target as HTMLSelectElement).value);
    } catch (err) {
      setError(err instanceof ApiError ? err.message : String(err));
    }
  };
  return (
    <div class="frame">
      <a class="skip" href="#main" onClick={(e) => (e.preventDefault(), document.getElementById('main')?.focus())}>
        Skip to content
      </a>
      <header class="top">
        <a class="brand" href={href('/loadbalancers')}>
          Ostia
        </a>
        <nav aria-label="Pages">
          <ul>
            {NAV.filter((n) => !n.admin || isAdmin.value).map((n) => (
              <li key={n.path}>
                <a href={href(n.path)} aria-current={current.startsWith(n.path) ? 'page' : undefined}>
                  {n.label}
                </a>
              </li>
            ))}
          </ul>
        </nav>
        <div class="who">
          <label class="project">
            <span>Project</span>
            <select value={s.project.id} onChange={onProject} aria-label="Project">
              {s.projects.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
            </select>
          </label>
          <span class="user" title={s.roles.join(', ')}>
            {s.user.name}
          </span>
          <button type="button" class="secondary" onClick={() => void logout()}>
            Log out
          </button>
        </div>
      </header>
      <Notice>{error}</Notice>
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </div>
  );
}
