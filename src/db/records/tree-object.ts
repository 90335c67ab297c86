/** What every object of a load balancer's tree stores alike: who owns it, its two statuses, when it changed. */
import type { OperatingStatus, ProvisioningStatus } from '../../domain/enums.js';
import { codec } from './codec.js';

export interface Owned {
  id: string;
  project_id: string;
}

export interface Statuses {
  provisioning_status: ProvisioningStatus;
  operating_status: OperatingStatus;
}

/** `YYYY-MM-DDTHH:MM:SS` text (domain/time.ts): sortable, and the same on SQLite and PostgreSQL. */
export interface Timestamps {
  created_at: string;
  updated_at: string | null;
}

export interface TreeObject extends Owned, Statuses, Timestamps {
  admin_state_up: boolean;
}

/** What every tree object stores alike, for reads of those columns of any table of the tree. */
export const treeObjectCodec = codec<TreeObject>({ admin_state_up: 'bool' });

type Common = keyof Owned | keyof Statuses | keyof Timestamps;

/**
 * A tree object's own settings: the record less what every tree object stores alike and less
 * its parent's id, which the API sets apart. What a PUT merges over, and what a view lists.
 */
export function settingsOf<R extends TreeObject, P extends keyof R>(record: R, parent: P): Omit<R, Common | P> {
  const { id: _id, project_id: _project, provisioning_status: _p, operating_status: _o, created_at: _c, updated_at: _u, ...rest } = record;
  const settings: Partial<R> = { ...(rest as Partial<R>) };
  delete settings[parent];
  return settings as Omit<R, Common | P>;
}
