/** What the API process tells the page before login (src/api/dashboard.ts's DashboardConfig). */
import type { DashboardConfig } from '../../src/domain/dashboard.js';

export type { DashboardConfig };

export async function loadConfig(): Promise<DashboardConfig> {
  const res = await fetch('/dashboard/config', { headers: { accept: 'application/json' } });
  if (!res.ok) throw new Error(`the dashboard's configuration could not be read (HTTP ${res.status}); is this an Ostia API process?`);
  return (await res.json()) as DashboardConfig;
}
