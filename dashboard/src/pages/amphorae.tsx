/**
 * The amphorae (admin): status, addresses, age, last heartbeat and why each was last failed over;
 * failover on request; and the provisioning trace of the load balancer one serves. One list request
 * per refresh, and the trace's own while one is shown.
 */
import { useMemo, useState } from 'preact/hooks';
import { ApiError, call, getAll, octavia } from '../api.js';
import { useLive } from '../live.js';
import { href, route, setQuery } from '../router.js';
import { can, isAdmin, session } from '../session.js';
import { Status } from '../components/status.js';
import { Table, type Column } from '../components/table.js';
import { Notice } from '../components/notice.js';
import { ProvisioningTrace } from '../components/trace.js';
import { FilterSearch, FilterSelect, matchesSearch } from '../components/filters.js';
import { age, ago, day, when } from '../format.js';
import { AmphoraRole, AmphoraStatus } from '../../../src/domain/enums.js';

/** An amphora as the admin API serves it, with Ostia's `last_heartbeat_at` and `status_reason`. */
interface Amphora {
  id: string;
  loadbalancer_id: string | null;
  role: string | null;
  status: string;
  lb_network_ip: string | null;
  vrrp_ip: string | null;
  ha_ip: string | null;
  cert_expiration: string | null;
  created_at: string;
  /** ISO UTC of the last heartbeat the health manager accepted; null: none yet. */
  last_heartbeat_at: string | null;
  status_reason: string | null;
}

const FILTERS = ['status', 'role'] as const;
const short = (id: string) => id.slice(0, 8);

function FailoverButton({ amphora, onDone }: { amphora: Amphora; onDone: (message: { kind: 'error' | 'info'; text: string }) => void }) {
  const [busy, setBusy] = useState(false);
  if (!can('amphora', 'put_failover')) return null;
  const run = async () => {
    if (!window.confirm(`Fail over amphora ${amphora.id}? A new amphora is built and this one removed.`)) return;
    setBusy(true);
    try {
      await call('PUT', octavia(`amphorae/${amphora.id}/failover`));
      onDone({ kind: 'info', text: `Failover of amphora ${short(amphora.id)} accepted: its load balancer is PENDING_UPDATE until the new amphora serves.` });
    } catch (e) {
      onDone({ kind: 'error', text: `Failover of amphora ${short(amphora.id)} refused: ${e instanceof ApiError ? e.message : String(e)}` });
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" class="secondary" disabled={busy} onClick={run} aria-label={`Failover of amphora ${amphora.id}`}>
      {busy ? 'Failing over…' : 'Failover'}
    </button>
  );
}

function AmphoraList() {
  const q = route.value.query;
  const search = q.get('q') ?? '';
  const traced = q.get('trace');
  const [message, setMessage] = useState<{ kind: 'error' | 'info'; text: string } | null>(null);
  const live = useLive((signal) => getAll<Amphora>(octavia('amphorae'), 'amphorae', signal), []);
  const all = live.data ?? [];
  const rows = useMemo(
    () => all.filter((a) => FILTERS.every((f) => !q.get(f) || a[f] === q.get(f)) && matchesSearch(search, [a.id, a.loadbalancer_id, a.lb_network_ip, a.vrrp_ip, a.ha_ip, a.status_reason])),
    [all, q.toString()],
  );
  const columns: Column<Amphora>[] = [
    { key: 'id', label: 'Amphora', sort: (a) => a.id, render: (a) => <code title={a.id}>{short(a.id)}</code> },
    {
      key: 'lb',
      label: 'Load balancer',
      sort: (a) => a.loadbalancer_id ?? '',
      render: (a) =>
        a.loadbalancer_id ? (
          <span class="cell-actions">
            <a href={href(`/loadbalancers/${a.loadbalancer_id}`)} title={a.loadbalancer_id}>
              {short(a.loadbalancer_id)}
            </a>
            <button
              type="button"
              class="link"
              aria-pressed={traced === a.loadbalancer_id}
              aria-label={`Show the provisioning trace of load balancer ${a.loadbalancer_id}`}
              onClick={() => setQuery({ trace: traced === a.loadbalancer_id ? '' : a.loadbalancer_id! })}
            >
              trace
            </button>
          </span>
        ) : (
          <span class="muted">none</span>
        ),
    },
    { key: 'role', label: 'Role', sort: (a) => a.role ?? '', render: (a) => a.role ?? '—' },
    { key: 'status', label: 'Status', sort: (a) => a.status, render: (a) => <Status value={a.status} /> },
    {
      key: 'addresses',
      label: 'Mgmt / VRRP address',
      sort: (a) => a.lb_network_ip ?? '',
      render: (a) => (
        <span class="addresses">
          <code title="management address (lb_network_ip)">{a.lb_network_ip ?? '—'}</code>
          <code title="VRRP address (vrrp_ip)">{a.vrrp_ip ?? '—'}</code>
        </span>
      ),
      wide: true,
    },
    { key: 'age', label: 'Age', sort: (a) => a.created_at, render: (a) => <span class="nowrap" title={when(a.created_at)}>{age(a.created_at)}</span> },
    {
      key: 'heartbeat',
      label: 'Last heartbeat',
      sort: (a) => a.last_heartbeat_at ?? '',
      render: (a) => <span class="nowrap" title={when(a.last_heartbeat_at)}>{ago(a.last_heartbeat_at)}</span>,
    },
    { key: 'reason', label: 'Status reason', render: (a) => (a.status_reason ? <span class="reason">{a.status_reason}</span> : <span class="muted">—</span>) },
    { key: 'cert', label: 'Certificate expires', sort: (a) => a.cert_expiration ?? '', render: (a) => <span title={when(a.cert_expiration)}>{day(a.cert_expiration)}</span>, wide: true },
    { key: 'actions', label: 'Actions', render: (a) => (a.loadbalancer_id ? <FailoverButton amphora={a} onDone={(m) => (setMessage(m), live.refresh())} /> : null) },
  ];
  return (
    <>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <FilterSearch placeholder="id, load balancer, address, reason" />
        <FilterSelect name="status" label="Status" options={AmphoraStatus.filter((s) => s !== 'DELETED')} />
        <FilterSelect name="role" label="Role" options={AmphoraRole} />
      </form>
      <Notice kind={message?.kind ?? 'error'}>{message?.text}</Notice>
      <Notice>{live.error?.message}</Notice>
      <p class="muted count" aria-live="polite">
        {live.data === undefined ? 'Loading…' : `${rows.length} of ${all.length} amphorae`}
      </p>
      <Table columns={columns} rows={rows} rowKey={(a) => a.id} empty={live.data === undefined ? 'Loading…' : 'No amphora matches.'} initialSort={{ key: 'age', desc: true }} caption="Amphorae" />
      {traced ? (
        <section aria-labelledby="trace-heading">
          <div class="heading">
            <h2 id="trace-heading">
              Provisioning trace of load balancer <a href={href(`/loadbalancers/${traced}`)}>{short(traced)}</a>
            </h2>
            <span class="actions">
              <a class="button secondary" href={href('/failovers', { lb: traced })}>
                Its failovers
              </a>
              <button type="button" class="secondary" onClick={() => setQuery({ trace: '' })}>
                Close trace
              </button>
            </span>
          </div>
          <ProvisioningTrace loadBalancerId={traced} />
        </section>
      ) : null}
    </>
  );
}

export function Amphorae() {
  return (
    <section class="rows-as-cards">
      <h1>Amphorae</h1>
      {isAdmin.value ? (
        <AmphoraList />
      ) : (
        <Notice kind="warning">The API's policy does not let {session.value?.user.name} read amphorae in project {session.value?.project.name}: only administrators do.</Notice>
      )}
    </section>
  );
}
