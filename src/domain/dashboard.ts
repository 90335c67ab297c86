/** What an API process tells the dashboard page before login (`GET /dashboard/config`). */
import type { PolicyMode } from './context.js';

/** Where every API process serves the dashboard. */
export const DASHBOARD_PREFIX = '/dashboard';

export interface DashboardConfig {
  /** Keystone's v3 URL: a path on this origin for the embedded identity, else the external one. */
  identity: string;
  /** Barbican's v1 URL, the same way. */
  keyManager: string;
  /** The RBAC policy the API applies: the page hides what it forbids (src/identity/policy.ts). */
  policy: PolicyMode;
  /** `config.identity.mode`: the page needs a Keystone (embedded or external) to log in. */
  identityMode: string;
}
