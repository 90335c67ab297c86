/**
 * Quotas: the project's limits with what it uses (`GET /v2/lbaas/quotas/{project}`, whose `in_use`
 * is Ostia's extension), and for those the policy lets see every project's (`quota` `get_all-global`)
 * each project's stored limits, editable where the policy allows `put`. One request per view.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError, call, get, getAll, lbaas } from '../api.js';
import { useLive } from '../live.js';
import { hrefWith, route, setQuery } from '../router.js';
import { can, config, session } from '../session.js';
import { Meter } from '../components/meter.js';
import { Notice } from '../components/notice.js';
import { Field } from '../components/field.js';
import { Table, type Column } from '../components/table.js';
import { QuotaResources, QUOTA_UNLIMITED, type QuotaResource } from '../../../src/domain/defaults.js';

/** What each limit counts, as a heading says it. */
const PLURAL: Record<QuotaResource, string> = {
  load_balancer: 'Load balancers',
  listener: 'Listeners',
  pool: 'Pools',
  health_monitor: 'Health monitors',
  member: 'Members',
  l7policy: 'L7 policies',
  l7rule: 'L7 rules',
};

type Limits = Record<QuotaResource, number | null>;
interface StoredQuota extends Limits {
  project_id: string;
}
interface EffectiveQuota extends Record<QuotaResource, number> {
  project_id: string;
  in_use: Record<QuotaResource, number>;
}

const limitText = (v: number | null) => (v === null ? 'default' : v === QUOTA_UNLIMITED ? 'unlimited' : String(v));

/** Project names: the session's, and for one who may list them, Keystone's (once; ids where unknown). */
function useProjectNames(listAll: boolean): Map<string, string> {
  const [names, setNames] = useState(() => new Map(session.value!.projects.map((p) => [p.id, p.name])));
  useEffect(() => {
    if (!listAll) return;
    const ctrl = new AbortController();
    get<{ projects: Array<{ id: string; name: string }> }>(`${config.value!.identity}/projects`, ctrl.signal).then(
      (r) => setNames((n) => new Map([...n, ...r.projects.map((p) => [p.id, p.name] as [string, string])])),
      () => undefined,
    );
    return () => ctrl.abort();
  }, [listAll]);
  return names;
}

function Usage({ projectId, name }: { projectId: string; name: string }) {
  const live = useLive((signal) => get<{ quota: EffectiveQuota }>(lbaas(`quotas/${projectId}`), signal), [projectId]);
  const quota = live.data?.quota;
  return (
    <section class="card" aria-labelledby="usage-heading">
      <div class="heading">
        <h2 id="usage-heading">Project {name}: used and allowed</h2>
        {can('quota', 'put', projectId) ? (
          <a class="button secondary" href={hrefWith({ edit: projectId })}>
            Edit limits
          </a>
        ) : null}
      </div>
      <Notice>{live.error?.message}</Notice>
      {quota ? (
        <div class="meters">
          {QuotaResources.map((r) => (
            <Meter key={r} label={PLURAL[r]} used={quota.in_use[r]} limit={quota[r] === QUOTA_UNLIMITED ? null : quota[r]} />
          ))}
        </div>
      ) : live.error ? null : (
        <p class="muted">Loading…</p>
      )}
    </section>
  );
}

/** A limit as typed: empty is the configured default (null); anything else goes to the API as it is, which judges it. */
function parseLimit(text: string): number | string | null {
  const t = text.trim();
  if (t === '') return null;
  return /^-?\d+$/.test(t) ? Number(t) : t;
}

/** Only the limits changed are sent; the live views above show them once saved. */
function EditLimits({ projectId, name, stored }: { projectId: string; name: string; stored: Limits | null }) {
  const [initial, setInitial] = useState<Record<QuotaResource, string> | null>(null);
  const [values, setValues] = useState<Record<QuotaResource, string> | null>(null);
  const [error, setError] = useState<{ field: string | null; message: string } | null>(null);
  const [saved, setSaved] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  // The stored row where the list has it (empty = default); else the limits in force.
  useEffect(() => {
    const fill = (limits: Limits) => {
      const v = Object.fromEntries(QuotaResources.map((r) => [r, limits[r] === null ? '' : String(limits[r])])) as Record<QuotaResource, string>;
      setInitial(v);
      setValues(v);
    };
    if (stored) return fill(stored);
    const ctrl = new AbortController();
    get<{ quota: EffectiveQuota }>(lbaas(`quotas/${projectId}`), ctrl.signal).then(
      (r) => fill(r.quota),
      (e: Error) => e.name !== 'AbortError' && setError({ field: null, message: e.message }),
    );
    return () => ctrl.abort();
  }, [projectId, stored === null]);
  const close = () => setQuery({ edit: '' });
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!values || !initial) return;
    const changed = QuotaResources.filter((r) => values[r] !== initial[r]);
    if (!changed.length) return close();
    setBusy(true);
    setError(null);
    setSaved(null);
    try {
      await call('PUT', lbaas(`quotas/${projectId}`), { body: { quota: Object.fromEntries(changed.map((r) => [r, parseLimit(values[r])])) } });
      setInitial(values);
      setSaved(`Saved: ${changed.map((r) => `${PLURAL[r].toLowerCase()} ${limitText(parseLimit(values[r]) as number | null)}`).join(', ')}.`);
    } catch (err) {
      setError(err instanceof ApiError ? { field: err.field, message: err.message } : { field: null, message: String(err) });
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-labelledby="edit-heading">
      <div class="heading">
        <h2 id="edit-heading">Limits of project {name}</h2>
        <button type="button" class="secondary" onClick={close}>
          Close
        </button>
      </div>
      <p class="muted">A number, {QUOTA_UNLIMITED} for unlimited, or empty for the configured default.</p>
      {values ? (
        <form onSubmit={submit}>
          <div class="form-grid limits-grid">
            {QuotaResources.map((r) => (
              <Field key={r} id={`quota-${r}`} label={PLURAL[r]} error={error?.field === r ? error.message : null}>
                <input
                  id={`quota-${r}`}
                  name={r}
                  inputMode="numeric"
                  placeholder="default"
                  value={values[r]}
                  aria-describedby={error?.field === r ? `quota-${r}-error` : undefined}
                  onInput={(e) => setValues({ ...values, [r]: (e.target as HTMLInputElement).value })}
                />
              </Field>
            ))}
          </div>
          <Notice>{error && !QuotaResources.includes(error.field as QuotaResource) ? error.message : null}</Notice>
          <Notice kind="info">{saved}</Notice>
          <button type="submit" disabled={busy}>
            {busy ? 'Saving…' : 'Save limits'}
          </button>
        </form>
      ) : (
        <Notice>{error?.message}</Notice>
      )}
    </section>
  );
}

function AllProjects({ names, onRows }: { names: Map<string, string>; onRows: (stored: StoredQuota[]) => void }) {
  const live = useLive((signal) => getAll<StoredQuota>(lbaas('quotas'), 'quotas', signal), []);
  const rows = live.data ?? [];
  useEffect(() => onRows(rows), [live.data]);
  const [other, setOther] = useState('');
  const columns: Column<StoredQuota>[] = [
    { key: 'project', label: 'Project', sort: (q) => names.get(q.project_id) ?? q.project_id, render: (q) => <span title={q.project_id}>{names.get(q.project_id) ?? <code>{q.project_id}</code>}</span> },
    ...QuotaResources.map((r) => ({ key: r, label: PLURAL[r], sort: (q: StoredQuota) => q[r] ?? -2, render: (q: StoredQuota) => <span class={q[r] === null ? 'muted' : ''}>{limitText(q[r])}</span> })),
    {
      key: 'edit',
      label: 'Edit',
      render: (q) =>
        can('quota', 'put', q.project_id) ? (
          <a class="button secondary" href={hrefWith({ edit: q.project_id })} aria-label={`Edit the limits of project ${names.get(q.project_id) ?? q.project_id}`}>
            Edit
          </a>
        ) : null,
    },
  ];
  return (
    <section aria-labelledby="all-heading">
      <h2 id="all-heading">Every project's stored limits</h2>
      <p class="muted">A project gets a row when it first creates something or its limits are set; "default" is the configured default.</p>
      <Notice>{live.error?.message}</Notice>
      <Table columns={columns} rows={rows} rowKey={(q) => q.project_id} empty={live.data === undefined ? 'Loading…' : 'No project has a quota row yet.'} initialSort={{ key: 'project' }} caption="Quotas of every project" />
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          if (other.trim()) setQuery({ edit: other.trim() });
        }}
      >
        <label class="grow">
          <span>Another project (id)</span>
          <input value={other} onInput={(e) => setOther((e.target as HTMLInputElement).value)} placeholder="project id" />
        </label>
        <button type="submit" class="secondary">
          Edit its limits
        </button>
      </form>
    </section>
  );
}

export function Quotas() {
  const s = session.value!;
  const edit = route.value.query.get('edit');
  const global = can('quota', 'get_all-global');
  const names = useProjectNames(global);
  const [stored, setStored] = useState<StoredQuota[]>([]);
  const storedOf = useMemo(() => (edit ? stored.find((q) => q.project_id === edit) ?? null : null), [edit, stored]);
  return (
    <section class="rows-as-cards stack">
      <h1>Quotas</h1>
      <Usage key={s.project.id} projectId={s.project.id} name={s.project.name} />
      {edit ? <EditLimits key={edit} projectId={edit} name={names.get(edit) ?? edit} stored={storedOf} /> : null}
      {global ? <AllProjects names={names} onRows={setStored} /> : null}
    </section>
  );
}
