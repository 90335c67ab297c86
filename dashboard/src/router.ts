/** Pages are addressed by the URL's fragment (`#/loadbalancers/<id>`), so the API process serves one static page and the back button works. */
import { signal } from '@preact/signals';

export interface Route {
  path: string;
  query: URLSearchParams;
}

function parse(hash: string): Route {
  const [path, query] = hash.replace(/^#/, '').split('?', 2) as [string, string | undefined];
  return { path: path || '/', query: new URLSearchParams(query ?? '') };
}

export const route = signal<Route>(parse(location.hash));
window.addEventListener('hashchange', () => {
  route.value = parse(location.hash);
});

export function href(path: string, query?: Record<string, string>): string {
  const q = query ? new URLSearchParams(Object.entries(query).filter(([, v]) => v !== '')).toString() : '';
  return `#${path}${q ? `?${q}` : ''}`;
}

export function navigate(path: string, query?: Record<string, string>): void {
  location.hash = href(path, query);
}

/** This page with some of its query values changed ('' drops one): a filter, a selected object, an open form. */
export function hrefWith(changes: Record<string, string>): string {
  return href(route.value.path, { ...Object.fromEntries(route.value.query.entries()), ...changes });
}

export function setQuery(changes: Record<string, string>): void {
  location.hash = hrefWith(changes);
}

/** `/loadbalancers/:id` against a path: the named segments, or null. */
export function match(pattern: string, path: string): Record<string, string> | null {
  const p = pattern.split('/');
  const s = path.split('/');
  if (p.length !== s.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < p.length; i++) {
    if (p[i]!.startsWith(':')) params[p[i]!.slice(1)] = decodeURIComponent(s[i]!);
    else if (p[i] !== s[i]) return null;
  }
  return params;
}
