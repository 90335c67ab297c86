/**
 * The certificates, CA bundles and CRLs listeners and pools use (the Ostia extension
 * `GET /v2/ostia/certificates`, as `ostia certs`), soonest to expire first, and the renewal of a
 * listener's certificate the way the README's "Renewal" does it with the CLI: the new certificate
 * stored in the key manager, then the listener pointed at it. One list request per refresh; the
 * renewal form watches its listener with its own.
 */
import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError, call, get, lbaas, ostia } from '../api.js';
import { useLive } from '../live.js';
import { href, hrefWith, route, setQuery } from '../router.js';
import { can, config } from '../session.js';
import { Table, type Column } from '../components/table.js';
import { Notice } from '../components/notice.js';
import { Status } from '../components/status.js';
import { Field } from '../components/field.js';
import { FilterSearch, FilterSelect, matchesSearch } from '../components/filters.js';
import { when } from '../format.js';
import { CertificateRoles, ServedCertificateRoles, expiryThreshold, type CertificateLine } from '../../../src/domain/certificate-expiry.js';
import { CertificateExpiryWarningDays } from '../../../src/domain/defaults.js';


interface Listener {
  id: string;
  name: string | null;
  project_id: string;
  provisioning_status: string;
  operating_status: string;
  default_tls_container_ref: string | null;
  sni_container_refs: string[];
  /** Ostia: why the last certificate change was rolled back. */
  status_reason: string | null;
}

const short = (id: string) => id.slice(0, 8);
const ROLES = [...new Set(Object.values(CertificateRoles).flat())];
/** A key manager reference by its kind and id (`secrets/<id>`), whatever host and path prefix it was written with. */
const refKey = (ref: string) => /(secrets|containers)\/([^/?#]+)\/?$/.exec(ref)?.slice(1).join('/') ?? ref;
/** Barbican's largest page: one listing of each names what this project stored. */
const NAME_PAGE = 100;

/** The names of this project's secrets and containers by reference, from one listing of each. */
function useReferenceNames(version: number): { names: Map<string, string>; error: string | null } {
  const [state, setState] = useState<{ names: Map<string, string>; error: string | null }>({ names: new Map(), error: null });
  useEffect(() => {
    const ctrl = new AbortController();
    const km = config.value!.keyManager;
    Promise.all([
      get<{ secrets: Array<{ secret_ref: string; name: string | null }> }>(`${km}/secrets?limit=${NAME_PAGE}`, ctrl.signal),
      get<{ containers: Array<{ container_ref: string; name: string | null }> }>(`${km}/containers?limit=${NAME_PAGE}`, ctrl.signal),
    ]).then(
      ([s, c]) => {
        const names = new Map<string, string>();
        for (const x of s.secrets) if (x.name) names.set(refKey(x.secret_ref), x.name);
        for (const x of c.containers) if (x.name) names.set(refKey(x.container_ref), x.name);
        setState({ names, error: null });
      },
      (e: Error) => {
        if (e.name !== 'AbortError') setState((st) => ({ ...st, error: e.message }));
      },
    );
    return () => ctrl.abort();
  }, [version]);
  return state;
}

function Reference({ value, names }: { value: string; names: Map<string, string> }) {
  const name = names.get(refKey(value));
  return name ? (
    <span title={value}>
      {name} <small class="muted">({refKey(value).split('/')[0] === 'containers' ? 'container' : 'secret'})</small>
    </span>
  ) : (
    <code class="ref">{value}</code>
  );
}

function DaysLeft({ line }: { line: CertificateLine }) {
  const threshold = expiryThreshold(line.days_to_expiry);
  const tone = line.days_to_expiry < 0 ? 'expired' : threshold === null ? 'ok' : `within-${threshold}`;
  return (
    <span class={`days days-${tone}`}>
      {(Math.floor(line.days_to_expiry * 10) / 10).toFixed(1)}
      {line.warning ? <small> {line.warning}</small> : null}
    </span>
  );
}

function base64Of(bytes: ArrayBuffer): string {
  let binary = '';
  for (const b of new Uint8Array(bytes)) binary += String.fromCharCode(b);
  return btoa(binary);
}

type Material = { kind: 'pem'; certificate: string; key: string; chain: string } | { kind: 'pkcs12'; file: File };

/**
 * Stores the material as the README does: a PKCS#12 bundle as one octet-stream secret; PEM parts as
 * text secrets in a certificate container. Returns the reference for the listener and every
 * reference it made, so a refused listener update can take them back.
 */
async function storeMaterial(name: string, m: Material): Promise<{ ref: string; made: string[] }> {
  const km = config.value!.keyManager;
  const made: string[] = [];
  const secret = async (secretName: string, body: Record<string, unknown>) => {
    const r = await call<{ secret_ref: string }>('POST', `${km}/secrets`, { body: { name: secretName, ...body } });
    made.push(r.secret_ref);
    return r.secret_ref;
  };
  try {
    if (m.kind === 'pkcs12') {
      const ref = await secret(name, { payload: base64Of(await m.file.arrayBuffer()), payload_content_type: 'application/octet-stream', payload_content_encoding: 'base64' });
      return { ref, made };
    }
    const text = (payload: string) => ({ payload: payload.trim() + '\n', payload_content_type: 'text/plain' });
    const refs = [
      { name: 'certificate', secret_ref: await secret(`${name}-cert`, text(m.certificate)) },
      { name: 'private_key', secret_ref: await secret(`${name}-key`, text(m.key)) },
      ...(m.chain.trim() ? [{ name: 'intermediates', secret_ref: await secret(`${name}-chain`, text(m.chain)) }] : []),
    ];
    const c = await call<{ container_ref: string }>('POST', `${km}/containers`, { body: { name, type: 'certificate', secret_refs: refs } });
    made.unshift(c.container_ref);
    return { ref: c.container_ref, made };
  } catch (e) {
    await forget(made);
    throw e;
  }
}

/** Deletes what a renewal stored (a container before its secrets); returns what could not be deleted. */
async function forget(refs: readonly string[]): Promise<string[]> {
  const left: string[] = [];
  for (const ref of refs) await call('DELETE', ref).catch(() => left.push(ref));
  return left;
}

/** The listener's references with `old` replaced by `fresh` wherever it appears (default and SNI). */
function renewedRefs(l: Listener, old: string, fresh: string): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  if (l.default_tls_container_ref === old) body.default_tls_container_ref = fresh;
  if (l.sni_container_refs.includes(old)) body.sni_container_refs = l.sni_container_refs.map((r) => (r === old ? fresh : r));
  return body;
}

/** Where the accepted renewal stands, from the listener as the API shows it now. */
function RenewalProgress({ listener, renewedTo, names }: { listener: Listener; renewedTo: string; names: Map<string, string> }) {
  if (listener.provisioning_status.startsWith('PENDING'))
    return <Notice kind="info">Renewal accepted: the listener is {listener.provisioning_status} until its amphora serves the new certificate and the VIP is checked to serve it.</Notice>;
  if (listener.provisioning_status === 'ERROR') return <Notice>The renewal did not complete: the listener is in ERROR (the reason is above); its clients keep the certificate they had.</Notice>;
  const serving = listener.default_tls_container_ref === renewedTo || listener.sni_container_refs.includes(renewedTo);
  return serving ? (
    <Notice kind="info">
      Renewed: the listener serves <Reference value={renewedTo} names={names} /> and is {listener.provisioning_status}. Its not-after shows in the list below once the API records it.
    </Notice>
  ) : (
    <Notice kind="warning">The listener is {listener.provisioning_status} but no longer refers to the new certificate: it was changed again since.</Notice>
  );
}

function RenewPanel({ listenerId, oldRef, names, onRenewed }: { listenerId: string; oldRef: string; names: Map<string, string>; onRenewed: () => void }) {
  const live = useLive((signal) => get<{ listener: Listener }>(lbaas(`listeners/${listenerId}`), signal), [listenerId]);
  const l = live.data?.listener;
  const [kind, setKind] = useState<'pem' | 'pkcs12'>('pem');
  const [name, setName] = useState('');
  const [pem, setPem] = useState({ certificate: '', key: '', chain: '' });
  const [file, setFile] = useState<File | null>(null);
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  /** The reference the listener was pointed at, once the API accepted it. */
  const [renewedTo, setRenewedTo] = useState<string | null>(null);
  const secretName = name.trim() || `${l?.name || `listener-${short(listenerId)}`}-${new Date().toISOString().slice(0, 10)}`;
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!l) return;
    setError(null);
    if (!Object.keys(renewedRefs(l, oldRef, '')).length) {
      setError('This listener no longer uses that reference (it changed since the list was read).');
      return;
    }
    if (kind === 'pkcs12' && !file) {
      setError('Choose a PKCS#12 file.');
      return;
    }
    let stored: { ref: string; made: string[] };
    try {
      setBusy('Storing the new certificate in the key manager…');
      stored = await storeMaterial(secretName, kind === 'pkcs12' ? { kind, file: file! } : { kind, ...pem });
    } catch (err) {
      setError(`The key manager refused the certificate: ${err instanceof ApiError ? err.message : String(err)}`);
      setBusy(null);
      return;
    }
    try {
      setBusy('Pointing the listener at it…');
      await call('PUT', lbaas(`listeners/${listenerId}`), { body: { listener: renewedRefs(l, oldRef, stored.ref) } });
      setRenewedTo(stored.ref);
      // The private key leaves the page's memory once the key manager holds it.
      setPem({ certificate: '', key: '', chain: '' });
      setFile(null);
      onRenewed();
      live.refresh();
    } catch (err) {
      const left = await forget(stored.made);
      const kept = left.length ? `; these could not be deleted from the key manager: ${left.join(', ')}` : ' (what was stored for it is deleted again)';
      setError(`The listener update was refused${kept}: ${err instanceof ApiError ? err.message : String(err)}`);
    } finally {
      setBusy(null);
    }
  };
  const pemField = (key: keyof typeof pem, label: string, hint: string, required: boolean) => (
    <Field id={`renew-${key}`} label={label} hint={hint}>
      <textarea id={`renew-${key}`} required={required} spellcheck={false} value={pem[key]} onInput={(e) => setPem({ ...pem, [key]: (e.target as HTMLTextAreaElement).value })} placeholder="-----BEGIN …-----" />
    </Field>
  );
  return (
    <section class="card renew" aria-labelledby="renew-heading">
      <div class="heading">
        <h2 id="renew-heading">Renew the certificate of listener {l?.name || short(listenerId)}</h2>
        <button type="button" class="secondary" onClick={() => setQuery({ renew: '', ref: '' })}>
          Close
        </button>
      </div>
      <Notice>{live.error?.message}</Notice>
      {l ? (
        <dl class="facts">
          <dt>Status</dt>
          <dd>
            <Status value={l.provisioning_status} /> <Status value={l.operating_status} />
          </dd>
          <dt>{renewedTo ? 'Replaced' : 'Replacing'}</dt>
          <dd>
            <Reference value={oldRef} names={names} />
          </dd>
          <dt>Default</dt>
          <dd>{l.default_tls_container_ref ? <Reference value={l.default_tls_container_ref} names={names} /> : '—'}</dd>
          <dt>SNI</dt>
          <dd>
            {l.sni_container_refs.length
              ? l.sni_container_refs.map((r) => (
                  <div key={r}>
                    <Reference value={r} names={names} />
                  </div>
                ))
              : '—'}
          </dd>
        </dl>
      ) : null}
      {l?.status_reason ? <Notice>Status reason: {l.status_reason}</Notice> : null}
      {renewedTo && l ? <RenewalProgress listener={l} renewedTo={renewedTo} names={names} /> : null}
      {renewedTo ? null : (
        <form onSubmit={submit} class="renew-form">
          <fieldset>
            <legend>New certificate</legend>
            <div class="choice" role="radiogroup" aria-label="Form of the new certificate">
              <label>
                <input type="radio" name="renew-kind" checked={kind === 'pem'} onChange={() => setKind('pem')} /> PEM certificate and key (stored as a certificate container)
              </label>
              <label>
                <input type="radio" name="renew-kind" checked={kind === 'pkcs12'} onChange={() => setKind('pkcs12')} /> PKCS#12 file (stored as one secret)
              </label>
            </div>
            <Field id="renew-name" label="Name in the key manager" hint={`Empty: ${secretName}`}>
              <input id="renew-name" value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
            </Field>
            {kind === 'pem' ? (
              <div class="form-grid">
                {pemField('certificate', 'Certificate (PEM)', 'The server certificate', true)}
                {pemField('key', 'Private key (PEM)', 'Unencrypted, matching the certificate', true)}
                {pemField('chain', 'Chain (PEM, optional)', 'Intermediate certificates, in order', false)}
              </div>
            ) : (
              <Field id="renew-file" label="PKCS#12 file" hint="Certificate, key and chain, with an empty password (openssl pkcs12 -export -passout pass:)">
                <input id="renew-file" type="file" accept=".p12,.pfx,application/x-pkcs12" onChange={(e) => setFile((e.target as HTMLInputElement).files?.[0] ?? null)} />
              </Field>
            )}
          </fieldset>
          <Notice>{error}</Notice>
          <button type="submit" disabled={busy !== null || !l}>
            {busy ?? 'Store and renew'}
          </button>
        </form>
      )}
    </section>
  );
}

export function Certificates() {
  const q = route.value.query;
  const search = q.get('q') ?? '';
  const renew = q.get('renew');
  const renewRef = q.get('ref');
  const [version, setVersion] = useState(0);
  const live = useLive((signal) => get<{ certificates: CertificateLine[] }>(ostia('certificates'), signal), []);
  const { names, error: namesError } = useReferenceNames(version);
  const all = live.data?.certificates ?? [];
  const rows = useMemo(() => {
    const role = q.get('role');
    const within = q.get('within');
    return all.filter(
      (c) =>
        (!role || c.role === role) &&
        (!within || c.days_to_expiry <= Number(within)) &&
        matchesSearch(search, [c.subject_cn, c.ref, names.get(refKey(c.ref)), c.object_id, c.load_balancer_id, c.fingerprint_sha256]),
    );
  }, [all, q.toString(), names]);
  const renewable = (c: CertificateLine) => c.object_kind === 'listener' && (ServedCertificateRoles as readonly string[]).includes(c.role) && can('listener', 'put', c.project_id);
  const columns: Column<CertificateLine>[] = [
    { key: 'cn', label: 'Subject CN', sort: (c) => c.subject_cn ?? '', render: (c) => c.subject_cn ?? <span class="muted">—</span> },
    {
      key: 'used',
      label: 'Used by',
      sort: (c) => `${c.object_kind} ${c.object_id}`,
      render: (c) => (
        <a href={href(`/loadbalancers/${c.load_balancer_id}`)} title={`${c.object_kind} ${c.object_id} of load balancer ${c.load_balancer_id}`}>
          {c.object_kind} {short(c.object_id)}
        </a>
      ),
    },
    { key: 'role', label: 'Role', sort: (c) => c.role, render: (c) => c.role },
    { key: 'not_after', label: 'Not after', sort: (c) => c.not_after, render: (c) => <span title={`${c.not_after} UTC`}>{when(c.not_after)}</span>, wide: true },
    { key: 'days', label: 'Days left', sort: (c) => c.days_to_expiry, render: (c) => <DaysLeft line={c} /> },
    { key: 'ref', label: 'Reference', sort: (c) => names.get(refKey(c.ref)) ?? c.ref, render: (c) => <Reference value={c.ref} names={names} />, wide: true },
    {
      key: 'actions',
      label: 'Renew',
      render: (c) =>
        renewable(c) ? (
          <a class="button secondary" href={hrefWith({ renew: c.object_id, ref: c.ref })} aria-label={`Renew the ${c.role} certificate ${c.subject_cn ?? ''} of listener ${c.object_id}`}>
            Renew
          </a>
        ) : null,
    },
  ];
  return (
    <section class="rows-as-cards">
      <h1>Certificates</h1>
      <p class="muted">What listeners and pools use, soonest to expire first, as recorded when each load balancer's last job finished (the same as <code>ostia certs</code>).</p>
      {renew && renewRef ? (
        <RenewPanel
          key={`${renew} ${renewRef}`}
          listenerId={renew}
          oldRef={renewRef}
          names={names}
          onRenewed={() => {
            setVersion((v) => v + 1);
            live.refresh();
          }}
        />
      ) : null}
      <form class="filters" role="search" onSubmit={(e) => e.preventDefault()}>
        <FilterSearch placeholder="subject, reference, listener, load balancer" />
        <FilterSelect name="role" label="Role" options={ROLES} />
        <FilterSelect name="within" label="Expiring" options={CertificateExpiryWarningDays.map((d) => [String(d), `within ${d} days`] as const)} any="whenever" />
      </form>
      <Notice>{live.error?.message}</Notice>
      {namesError ? <Notice kind="warning">The key manager's names could not be read ({namesError}): references are shown as URLs.</Notice> : null}
      <p class="muted count" aria-live="polite">
        {live.data === undefined ? 'Loading…' : `${rows.length} of ${all.length} certificates in use`}
      </p>
      <Table columns={columns} rows={rows} rowKey={(c) => `${c.object_id} ${c.role} ${c.ref}`} empty={live.data === undefined ? 'Loading…' : all.length ? 'No certificate matches.' : 'No listener or pool uses a certificate.'} initialSort={{ key: 'days' }} caption="Certificates in use" />
    </section>
  );
}
