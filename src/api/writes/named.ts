/** What a create and a PUT do to the fields every named object of the tree has. */
import { randomUUID } from 'node:crypto';
import { adminStateOf } from '../../domain/rules/listener.js';
import { timestamp } from '../../domain/time.js';

interface Named {
  name: string;
  description: string;
  admin_state_up: boolean;
}

interface NamedBody {
  name?: string | null;
  description?: string | null;
  admin_state_up?: boolean | null;
}

/** A new object's: absent or null texts are empty; enabled unless the body says otherwise (null disables, Octavia's quirk). */
export function namedCreate(b: NamedBody): Named {
  return { name: b.name ?? '', description: b.description ?? '', admin_state_up: adminStateOf(b.admin_state_up, true) };
}

/** Absent keeps, null clears a text (and, Octavia's quirk, disables). */
export function namedUpdate(current: Named, b: NamedBody): Named {
  return {
    name: b.name === undefined ? current.name : (b.name ?? ''),
    description: b.description === undefined ? current.description : (b.description ?? ''),
    admin_state_up: adminStateOf(b.admin_state_up, current.admin_state_up),
  };
}

/** A listener's or pool's columns that come from where it is created: a new id, its load balancer's project, PENDING_CREATE and OFFLINE. */
export function newLoadBalancerChild(lb: { id: string; project_id: string }, b: NamedBody) {
  return {
    id: randomUUID(),
    project_id: lb.project_id,
    load_balancer_id: lb.id,
    ...namedCreate(b),
    provisioning_status: 'PENDING_CREATE',
    operating_status: 'OFFLINE',
    created_at: timestamp(),
    updated_at: null,
  } as const;
}
