/** What a PUT does to the fields every named object of the tree has. */
import { adminStateOf } from '../../domain/rules/listener.js';

interface Named {
  name: string;
  description: string;
  admin_state_up: number;
}

interface NamedBody {
  name?: string | null;
  description?: string | null;
  admin_state_up?: boolean | null;
}

/** A new object's: absent or null texts are empty; enabled unless the body says otherwise (null disables, Octavia's quirk). */
export function namedCreate(b: NamedBody): Named {
  return { name: b.name ?? '', description: b.description ?? '', admin_state_up: adminStateOf(b.admin_state_up, true) ? 1 : 0 };
}

/** Absent keeps, null clears a text (and, Octavia's quirk, disables). */
export function namedUpdate(current: Named, b: NamedBody): Named {
  return {
    name: b.name === undefined ? current.name : (b.name ?? ''),
    description: b.description === undefined ? current.description : (b.description ?? ''),
    admin_state_up: adminStateOf(b.admin_state_up, current.admin_state_up === 1) ? 1 : 0,
  };
}
