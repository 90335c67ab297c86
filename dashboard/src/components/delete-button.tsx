/** Delete one object after a confirmation; the API's refusal (409 immutable, 403 policy…) is shown in its own words. */
import { useState } from 'preact/hooks';
import { ApiError, call } from '../api.js';
import { can } from '../session.js';
import { KINDS, resourceUrl, type Kind } from '../resources.js';

export function DeleteButton({ kind, id, parentId = null, name, cascade = false, projectId, onDeleted, onError }: { kind: Kind; id: string; parentId?: string | null; name: string; cascade?: boolean; projectId?: string; onDeleted: () => void; onError: (message: string | null) => void }) {
  const [busy, setBusy] = useState(false);
  if (!can(KINDS[kind].policy, 'delete', projectId)) return null;
  const run = async () => {
    if (!window.confirm(`Delete ${KINDS[kind].label.toLowerCase()} ${name}${cascade ? ' and everything under it' : ''}?`)) return;
    setBusy(true);
    onError(null);
    try {
      await call('DELETE', resourceUrl(kind, parentId, id) + (cascade ? '?cascade=true' : ''));
      onDeleted();
    } catch (e) {
      onError(e instanceof ApiError ? e.message : String(e));
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" class="danger" disabled={busy} onClick={run} aria-label={`Delete ${KINDS[kind].label.toLowerCase()} ${name}`}>
      {busy ? 'Deleting…' : 'Delete'}
    </button>
  );
}
