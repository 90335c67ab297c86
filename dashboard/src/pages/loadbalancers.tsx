/** The load balancers of the project (of every project for an admin): filters, search, sort, status colours; one list request per refresh. */
import { useMemo } from 'preact/hooks';
import { getAll, lbaas } from '../api.js';
import { useLive } from '../live.js';
import { href, route } from '../router.js';
import { can, isAdmin } from '../session.js';
import { Status } from '../components/status.js';
import { Table, type Column } from '../components/table.js';
import { Notice } from '../components/notice.js';
import { FilterSearch, FilterSelect, matchesSearch } from '../components/filters.js';
import type { LoadBalancer } from '../types.js';
import { when } from '../format.js';
import { OperatingStatus, ProvisioningStatus } from '../../../src/domain/enums.js';

const FILTERS = ['provisioning_status', 'operating_status', 'provider'] as const;

export function LoadBalancers() {
  const q = route.value.query;
  const search = q.get('q') ?? '';
  const live = useLive((signal) => getAll<LoadBalancer>(lbaas('loadbalancers'), 'loadbalancers', signal), []);
  const all = live.data ?? [];
  const providers = useMemo(() => [...new Set(all.map((lb) => lb.provider))].sort(), [all]);
  const rows = useMemo(
    () => all.filter((lb) => FILTERS.every((f) => !q.get(f) || lb[f] === q.get(f)) && matchesSearch(search, [lb.name, lb.id, lb.vip_address, lb.description, ...lb.tags])),
    [all, q.toString()],
  );
  const columns: Column<LoadBalancer>[] = [
    { key: 'name', label: 'Name', sort: (lb) => lb.name ?? '', render: (lb) => <a href={href(`/loadbalancers/${lb.id}`)}>{lb.name || lb.id}</a> },
    { key: 'vip', label: 'VIP address', sort: (lb) => lb.vip_address ?? '', render: (lb) => <code>{lb.vip_address}</code> },
    { key: 'provisioning', label: 'Provisioning', sort: (lb) => lb.provisioning_status, render: (lb) => <Status value={lb.provisioning_status} /> },
    { key: 'operating', label: 'Operating', sort: (lb) => lb.operating_status, render: (lb) => <Status value={lb.operating_status} /> },
    { key: 'provider', label: 'Provider', sort: (lb) => lb.provider, render: (lb) => lb.provider, wide: true },
    { key: 'listeners', label: 'Listeners', sort: (lb) => lb.listeners.length, render: (lb) => lb.listeners.length, wide: true },
    ...(isAdmin.value ? [{ key: 'project', label: 'Project', sort: (lb: LoadBalancer) => lb.project_id, render: (lb: LoadBalancer) => <code title={lb.project_id}>{lb.project_id.slice(0, 8)}</code>, wide: true }] : []),
    { key: 'created', label: 'Created', sort: (lb) => lb.created_at, render: (lb) => when(lb.created_at), wide: true },
  ];
  return (
    <section>
      <div class="heading">
        <h1>Load balancers</h1>
        {can('loadbalancer', 'post') ? (
          <a class="button" href={href('/create')}>
            Create load balancer
          </a>
        ) : null}
      </div>
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <FilterSearch placeholder="name, id, VIP address, tag" />
        <FilterSelect name="provisioning_status" label="Provisioning" options={ProvisioningStatus.filter((s) => s !== 'DELETED')} />
        <FilterSelect name="operating_status" label="Operating" options={OperatingStatus} />
        <FilterSelect name="provider" label="Provider" options={providers} />
      </form>
      <Notice>{live.error?.message}</Notice>
      <p class="muted count" aria-live="polite">
        {live.data === undefined ? 'Loading…' : `${rows.length} of ${all.length} load balancers`}
      </p>
      <Table columns={columns} rows={rows} rowKey={(lb) => lb.id} empty={live.data === undefined ? 'Loading…' : 'No load balancer matches.'} initialSort={{ key: 'name' }} caption="Load balancers" />
    </section>
  );
}
