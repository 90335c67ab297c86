/**
 * One load balancer: its facts and actions, its status tree drawn as a graph and its listeners'
 * statistics charted, both from the one live request (the status tree), and its listeners,
 * pools (with members and monitor) and L7 policies (with rules) to create, edit and delete.
 * Those lists are read once, and again after a write or when the tree shows that something
 * was added, removed or finished changing.
 */
import type { ComponentChildren } from 'preact';
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, call, get, getAll, lbaas } from '../api.js';
import { useLive } from '../live.js';
import { href, navigate, route } from '../router.js';
import { can } from '../session.js';
import { KINDS, resourceUrl, type Kind } from '../resources.js';
import { Status } from '../components/status.js';
import { Notice } from '../components/notice.js';
import { Table, type Column } from '../components/table.js';
import { DeleteButton } from '../components/delete-button.js';
import { StatusGraph } from '../components/status-graph.js';
import { StatsCharts, useStatsHistory } from '../components/stats-charts.js';
import { when } from '../format.js';
import { PendingStatuses } from '../../../src/domain/enums.js';
import type { HealthMonitor, L7Policy, L7Rule, Listener, LoadBalancer, LoadBalancerStatus, Member, Pool, StatusTree } from '../types.js';

interface Children {
  lb: LoadBalancer;
  flavor: string | null;
  listeners: Listener[];
  pools: Pool[];
  members: Map<string, Member[]>;
  monitors: Map<string, HealthMonitor>;
  policies: L7Policy[];
  rules: Map<string, L7Rule[]>;
}

/**
 * One request per collection, filtered to this load balancer where the API filters on it
 * (listeners, pools), else to its project and kept to its objects here (monitors, policies);
 * members and rules are sub-collections, read per pool and per policy.
 */
async function loadChildren(id: string, signal: AbortSignal): Promise<Children> {
  const [{ loadbalancer: lb }, listeners, pools] = await Promise.all([
    get<{ loadbalancer: LoadBalancer }>(lbaas(`loadbalancers/${id}`), signal),
    getAll<Listener>(lbaas(`listeners?loadbalancer_id=${id}`), 'listeners', signal),
    getAll<Pool>(lbaas(`pools?loadbalancer_id=${id}`), 'pools', signal),
  ]);
  const project = encodeURIComponent(lb.project_id);
  const listenerIds = new Set(listeners.map((l) => l.id));
  const [flavor, monitors, members, policies] = await Promise.all([
    lb.flavor_id ? get<{ flavor: { name: string } }>(lbaas(`flavors/${lb.flavor_id}`), signal).then((f) => f.flavor.name, () => null) : null,
    pools.some((p) => p.healthmonitor_id) ? getAll<HealthMonitor>(lbaas(`healthmonitors?project_id=${project}`), 'healthmonitors', signal) : [],
    Promise.all(pools.map((p) => getAll<Member>(resourceUrl('member', p.id), 'members', signal))),
    listeners.some((l) => l.l7policies.length) ? getAll<L7Policy>(lbaas(`l7policies?project_id=${project}`), 'l7policies', signal).then((all) => all.filter((p) => listenerIds.has(p.listener_id))) : [],
  ]);
  const rules = await Promise.all(policies.map((p) => getAll<L7Rule>(resourceUrl('l7rule', p.id), 'rules', signal)));
  const poolOf = new Map(pools.flatMap((p) => (p.healthmonitor_id ? [[p.healthmonitor_id, p.id] as const] : [])));
  return {
    lb,
    flavor,
    listeners,
    pools,
    members: new Map(pools.map((p, i) => [p.id, members[i]!])),
    monitors: new Map(monitors.flatMap((m) => (poolOf.has(m.id) ? [[poolOf.get(m.id)!, m] as const] : []))),
    policies: policies.sort((a, b) => a.position - b.position),
    rules: new Map(policies.map((p, i) => [p.id, rules[i]!])),
  };
}

/** What changes in the tree when something was added or removed, or when a change finished. */
function shapeOf(t: LoadBalancerStatus): string {
  const ids = t.listeners.flatMap((l) => [l.id, l.provisioning_status, ...l.pools.flatMap((p) => [p.id, p.provisioning_status, p.health_monitor?.id, ...p.members.map((m) => m.id)])]);
  return [t.provisioning_status, ...ids].join();
}

/** Every status in the tree by object id: the lists' statuses are as old as the lists, these are live. */
function liveStatuses(t: LoadBalancerStatus | undefined): Map<string, { operating_status: string; provisioning_status: string }> {
  const out = new Map<string, { operating_status: string; provisioning_status: string }>();
  if (!t) return out;
  out.set(t.id, t);
  for (const l of t.listeners) {
    out.set(l.id, l);
    for (const p of l.pools) {
      out.set(p.id, p);
      if (p.health_monitor) out.set(p.health_monitor.id, p.health_monitor);
      for (const m of p.members) out.set(m.id, m);
    }
  }
  return out;
}

const label = (o: { name: string | null; id: string }) => o.name || o.id.slice(0, 8);

/** Keyed by the id: another load balancer's page starts afresh (its lists, its statistics' window). */
export function LoadBalancerPage({ params }: { params: Record<string, string> }) {
  return <LoadBalancerView key={params.id} id={params.id!} />;
}

function LoadBalancerView({ id }: { id: string }) {
  const live = useLive((signal) => get<StatusTree>(lbaas(`loadbalancers/${id}/status`), signal), [id]);
  const tree = live.data?.statuses.loadbalancer;
  const [version, setVersion] = useState(0);
  const [children, setChildren] = useState<{ data: Children | null; error: ApiError | null }>({ data: null, error: null });
  const [message, setMessage] = useState<string | null>(null);
  const [failingOver, setFailingOver] = useState(false);

  useEffect(() => {
    const abort = new AbortController();
    loadChildren(id, abort.signal).then(
      (data) => setChildren({ data, error: null }),
      (e: Error) => {
        if (e.name !== 'AbortError') setChildren((c) => ({ ...c, error: e instanceof ApiError ? e : new ApiError(0, e.message, null) }));
      },
    );
    return () => abort.abort();
  }, [id, version]);
  const reload = () => setVersion((v) => v + 1);
  const written = () => {
    reload();
    live.refresh();
  };

  const shape = tree ? shapeOf(tree) : null;
  const lastShape = useRef<string | null>(null);
  useEffect(() => {
    if (shape === null) return;
    if (lastShape.current !== null && lastShape.current !== shape) reload();
    lastShape.current = shape;
  }, [shape]);

  const history = useStatsHistory(tree?.listeners, live.at);
  const statuses = useMemo(() => liveStatuses(tree), [live.data]);
  const shown = route.value.query.get('show');
  useEffect(() => {
    const el = shown ? document.getElementById(`obj-${shown}`) : null;
    el?.scrollIntoView({ block: 'center' });
    el?.focus({ preventScroll: true });
  }, [shown, children.data !== null]);

  const gone = live.error?.status === 404 || children.error?.status === 404;
  if (gone) {
    return (
      <section>
        <h1>Load balancer not found</h1>
        <Notice kind="warning">
          Load balancer <code>{id}</code> does not exist (any more): it has been deleted.
        </Notice>
        <p>
          <a href={href('/loadbalancers')}>Back to the load balancers</a>
        </p>
      </section>
    );
  }

  const c = children.data;
  const lb = c?.lb;
  const project = lb?.project_id ?? null;
  const allowed = (kind: Kind, action: 'post' | 'put') => project !== null && can(KINDS[kind].policy, action, project);
  const statusOf = (o: { id: string; operating_status: string; provisioning_status: string }) => statuses.get(o.id) ?? o;
  const link = (objectId: string) => href(`/loadbalancers/${id}`, { show: objectId });
  const anchor = (objectId: string, text: ComponentChildren) => (
    <span id={`obj-${objectId}`} tabIndex={-1} class={shown === objectId ? 'shown' : undefined}>
      {text}
    </span>
  );
  const liveBadges = (o: { id: string; operating_status: string; provisioning_status: string }) => (
    <span class="badges">
      <Status value={statusOf(o).operating_status} /> <Status value={statusOf(o).provisioning_status} />
    </span>
  );
  const statusColumn = <T extends { id: string; operating_status: string; provisioning_status: string }>(): Column<T> => ({ key: 'status', label: 'Status', render: liveBadges });
  const deleteProps = { projectId: project ?? undefined, onDeleted: written, onError: setMessage };
  const editLink = (kind: Kind, object: { id: string; name: string | null }, query?: Record<string, string>) =>
    allowed(kind, 'put') ? (
      <a class="button secondary" href={href(`/edit/${kind}/${object.id}`, query)} aria-label={`Edit ${KINDS[kind].label.toLowerCase()} ${label(object)}`}>
        Edit
      </a>
    ) : null;
  /** Edit and Delete of one object; members and rules name their pool or policy too. */
  const objectActions = (kind: Kind, object: { id: string; name: string | null }, parentId: string | null = null) => (
    <span class="actions">
      {editLink(kind, object, parentId ? { [KINDS[kind].parent!]: parentId } : undefined)}
      <DeleteButton kind={kind} id={object.id} parentId={parentId} name={label(object)} {...deleteProps} />
    </span>
  );
  const addLink = (kind: Kind, query: Record<string, string>, text: string) =>
    allowed(kind, 'post') ? (
      <a class="button secondary" href={href(`/new/${kind}`, query)}>
        {text}
      </a>
    ) : null;

  const failover = async () => {
    if (!window.confirm(`Fail over load balancer ${lb ? label(lb) : id}? Its amphorae are rebuilt.`)) return;
    setFailingOver(true);
    setMessage(null);
    try {
      await call('PUT', lbaas(`loadbalancers/${id}/failover`));
      live.refresh();
    } catch (e) {
      setMessage(e instanceof ApiError ? e.message : String(e));
    } finally {
      setFailingOver(false);
    }
  };

  const provisioning = tree?.provisioning_status ?? lb?.provisioning_status;
  const reason = tree ? tree.status_reason : lb?.status_reason;
  const name = lb ? label(lb) : tree ? label(tree) : id;
  const poolName = (poolId: string | null) => {
    const p = poolId ? c?.pools.find((x) => x.id === poolId) : undefined;
    return p ? <a href={link(p.id)}>{label(p)}</a> : poolId ? <code>{poolId.slice(0, 8)}</code> : '—';
  };

  const listenerColumns: Column<Listener>[] = [
    { key: 'name', label: 'Name', render: (l) => anchor(l.id, label(l)) },
    { key: 'port', label: 'Protocol', render: (l) => `${l.protocol} :${l.protocol_port}` },
    { key: 'pool', label: 'Default pool', render: (l) => poolName(l.default_pool_id), wide: true },
    { key: 'limit', label: 'Connection limit', render: (l) => (l.connection_limit < 0 ? 'unlimited' : l.connection_limit), wide: true },
    statusColumn<Listener>(),
    { key: 'actions', label: 'Actions', render: (l) => objectActions('listener', l) },
  ];
  const memberColumns = (pool: Pool): Column<Member>[] => [
    { key: 'name', label: 'Member', render: (m) => anchor(m.id, label(m)) },
    { key: 'address', label: 'Address', render: (m) => <code>{`${m.address}:${m.protocol_port}`}</code> },
    { key: 'weight', label: 'Weight', render: (m) => `${m.weight}${m.backup ? ' (backup)' : ''}`, wide: true },
    statusColumn<Member>(),
    { key: 'actions', label: 'Actions', render: (m) => objectActions('member', m, pool.id) },
  ];
  const policyColumns: Column<L7Policy>[] = [
    { key: 'position', label: 'Position', render: (p) => p.position },
    { key: 'name', label: 'Policy', render: (p) => anchor(p.id, label(p)) },
    {
      key: 'action',
      label: 'Action',
      render: (p) => (
        <>
          {p.action}
          {p.redirect_pool_id ? <> → {poolName(p.redirect_pool_id)}</> : null}
          {p.redirect_url || p.redirect_prefix ? <> → <code>{p.redirect_url ?? p.redirect_prefix}</code></> : null}
        </>
      ),
    },
    {
      key: 'rules',
      label: 'Rules',
      render: (p) => (
        <ul class="rules">
          {(c?.rules.get(p.id) ?? []).map((r) => (
            <li key={r.id}>
              <span>
                {r.invert ? 'NOT ' : ''}
                {r.type}
                {r.key ? ` ${r.key}` : ''} {r.compare_type} <code>{r.value}</code> <Status value={r.provisioning_status} />
              </span>
              {objectActions('l7rule', { id: r.id, name: `${r.type} ${r.compare_type} ${r.value}` }, p.id)}
            </li>
          ))}
          {allowed('l7rule', 'post') ? (
            <li>
              <a href={href('/new/l7rule', { l7policy_id: p.id })}>Add rule</a>
            </li>
          ) : null}
        </ul>
      ),
    },
    { key: 'provisioning', label: 'Status', render: (p) => <Status value={p.provisioning_status} /> },
    { key: 'actions', label: 'Actions', render: (p) => objectActions('l7policy', p) },
  ];

  return (
    <section class="lb-page">
      <p class="crumbs">
        <a href={href('/loadbalancers')}>Load balancers</a> /
      </p>
      <div class="heading">
        <h1>{anchor(id, name)}</h1>
        {lb ? (
          <div class="actions">
            {editLink('loadbalancer', { id, name })}
            {can('loadbalancer', 'put_failover', project) ? (
              <button type="button" class="secondary" disabled={failingOver} onClick={failover}>
                {failingOver ? 'Failing over…' : 'Failover'}
              </button>
            ) : null}
            <DeleteButton kind="loadbalancer" id={id} name={name} cascade projectId={lb.project_id} onDeleted={() => navigate('/loadbalancers')} onError={setMessage} />
          </div>
        ) : null}
      </div>
      <Notice>{message}</Notice>
      <Notice>{live.error?.message ?? children.error?.message}</Notice>
      {provisioning && (PendingStatuses as readonly string[]).includes(provisioning) ? (
        <Notice kind="info">
          The load balancer is {provisioning}: a change is being applied, and the API refuses others until it is ACTIVE again.
        </Notice>
      ) : null}
      {reason ? <Notice kind="warning">Status reason: {reason}</Notice> : null}
      <div class="card">
        <dl class="facts lb-facts">
          <dt>ID</dt>
          <dd>
            <code>{id}</code>
          </dd>
          <dt>VIP address</dt>
          <dd>
            <code>{lb?.vip_address ?? '…'}</code>
          </dd>
          <dt>Provisioning</dt>
          <dd>
            <Status value={provisioning} />
          </dd>
          <dt>Operating</dt>
          <dd>
            <Status value={tree?.operating_status ?? lb?.operating_status} />
          </dd>
          <dt>Provider</dt>
          <dd>{lb?.provider ?? '…'}</dd>
          <dt>Flavor</dt>
          <dd>{lb ? (lb.flavor_id ? c?.flavor ?? <code>{lb.flavor_id}</code> : 'none') : '…'}</dd>
          {lb?.description ? (
            <>
              <dt>Description</dt>
              <dd>{lb.description}</dd>
            </>
          ) : null}
          <dt>Created</dt>
          <dd>{lb ? when(lb.created_at) : '…'}</dd>
        </dl>
      </div>

      <h2>Status</h2>
      {tree ? (
        <StatusGraph
          tree={tree}
          link={link}
          details={{
            listener: (lid) => {
              const l = c?.listeners.find((x) => x.id === lid);
              return l ? `${l.protocol} :${l.protocol_port}` : undefined;
            },
            pool: (pid) => {
              const p = c?.pools.find((x) => x.id === pid);
              return p ? `${p.protocol} · ${p.lb_algorithm}` : undefined;
            },
          }}
        />
      ) : (
        <p class="muted">Loading…</p>
      )}
      {live.at ? <p class="muted count">Updated {live.at.toLocaleTimeString()}</p> : null}

      {tree && history.size ? (
        <>
          <h2>Statistics</h2>
          <StatsCharts listeners={tree.listeners} history={history} />
        </>
      ) : null}

      <div class="heading section">
        <h2>Listeners</h2>
        {addLink('listener', { loadbalancer_id: id }, 'Add listener')}
      </div>
      <Table columns={listenerColumns} rows={c?.listeners ?? []} rowKey={(l) => l.id} empty={c ? 'No listener yet.' : 'Loading…'} caption="Listeners" />

      <div class="heading section">
        <h2>Pools</h2>
        {addLink('pool', { loadbalancer_id: id }, 'Add pool')}
      </div>
      {c && !c.pools.length ? <p class="muted">No pool yet.</p> : null}
      {(c?.pools ?? []).map((p) => {
        const hm = c!.monitors.get(p.id);
        const users = c!.listeners.filter((l) => p.listeners.some((x) => x.id === l.id));
        return (
          <article class="card pool" key={p.id} aria-label={`Pool ${label(p)}`}>
            <div class="heading">
              <h3>
                {anchor(p.id, `Pool ${label(p)}`)} {liveBadges(p)}
              </h3>
              {objectActions('pool', p)}
            </div>
            <p class="muted">
              {p.protocol} · {p.lb_algorithm}
              {p.session_persistence ? ` · session persistence ${p.session_persistence.type}` : ''}
              {p.tls_enabled ? ' · TLS to members' : ''} · {users.length ? `used by ${users.map(label).join(', ')}` : 'used by no listener'}
            </p>
            <div class="heading">
              <h4>Health monitor</h4>
              {hm ? null : addLink('healthmonitor', { pool_id: p.id }, 'Add health monitor')}
            </div>
            {hm ? (
              <div class="monitor">
                <span>
                  {anchor(hm.id, label(hm))}: {hm.type}
                  {hm.url_path ? (
                    <>
                      {' '}
                      {hm.http_method} <code>{hm.url_path}</code> expects {hm.expected_codes}
                    </>
                  ) : null}
                  , every {hm.delay} s (timeout {hm.timeout} s); up after {hm.max_retries}, down after {hm.max_retries_down} checks
                </span>
                {liveBadges(hm)}
                {objectActions('healthmonitor', hm)}
              </div>
            ) : (
              <p class="muted">None: nothing checks the members, whose operating status is NO_MONITOR.</p>
            )}
            <div class="heading">
              <h4>Members</h4>
              {addLink('member', { pool_id: p.id }, 'Add member')}
            </div>
            <Table columns={memberColumns(p)} rows={c!.members.get(p.id) ?? []} rowKey={(m) => m.id} empty="No member yet." caption={`Members of pool ${label(p)}`} />
          </article>
        );
      })}

      <h2>L7 policies</h2>
      {c && !c.listeners.length ? <p class="muted">L7 policies belong to listeners: add a listener first.</p> : null}
      {(c?.listeners ?? []).map((l) => (
        <div key={l.id} class="policies">
          <div class="heading">
            <h3>
              On listener {label(l)} ({l.protocol} :{l.protocol_port})
            </h3>
            {addLink('l7policy', { listener_id: l.id }, 'Add L7 policy')}
          </div>
          <Table columns={policyColumns} rows={c!.policies.filter((p) => p.listener_id === l.id)} rowKey={(p) => p.id} empty="No L7 policy." caption={`L7 policies of listener ${label(l)}`} />
        </div>
      ))}
    </section>
  );
}
