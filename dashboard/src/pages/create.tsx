/**
 * A whole load balancer in one request: Octavia's graph create (`POST /v2/lbaas/loadbalancers`
 * with its listener, the listener's default pool, the pool's members and health monitor nested).
 * The API creates all of it or nothing; its refusal is shown beside the field it names.
 */
import { useRef, useState } from 'preact/hooks';
import { ApiError, call, lbaas } from '../api.js';
import { href, navigate } from '../router.js';
import { can, isAdmin } from '../session.js';
import { Notice } from '../components/notice.js';
import { SchemaFields, SchemaInput, useRevealError } from '../components/schema-form.js';
import { useChoices, sourceOf, type Source } from '../choices.js';
import { createBody, InputError, inputsOf, labelOf, type Body, type FieldSpec, type Input, type Inputs } from '../schema-fields.js';
import { applies, DEFAULTS, fitting, formFields, monitorTypesFor, narrowed, poolProtocolsFor } from '../resource-fields.js';
import type { Kind } from '../resources.js';

type Section = 'loadbalancer' | 'listener' | 'pool' | 'healthmonitor';

/** What each section shows: the resource's create fields, less what the graph supplies itself. */
const SPECS: Record<Section, FieldSpec[]> = {
  loadbalancer: [],
  listener: formFields('listener', 'create', false).filter((s) => s.name !== 'default_pool_id'),
  pool: formFields('pool', 'create', false),
  healthmonitor: formFields('healthmonitor', 'create', false),
};
const MEMBER_SPECS = formFields('member', 'create', false).filter((s) => ['address', 'protocol_port', 'weight'].includes(s.name));

/** Shown first in each section, the rest under its "More … settings". */
const FIRST: Record<Section, readonly string[]> = {
  loadbalancer: ['name', 'vip_subnet_id', 'vip_address', 'provider', 'flavor_id'],
  listener: ['protocol', 'protocol_port', 'default_tls_container_ref', 'name'],
  pool: ['name', 'protocol', 'lb_algorithm'],
  healthmonitor: ['type', 'delay', 'timeout', 'max_retries', 'url_path'],
};

/** Attributes several sections have: their labels say whose they are ("Pool name"). */
const SHARED = new Set(['name', 'description', 'admin_state_up', 'tags', 'protocol', 'protocol_port', 'type', 'tls_ciphers', 'tls_versions', 'alpn_protocols', 'address', 'weight']);

function labelIn(owner: string, plain: readonly string[] = []) {
  return (s: FieldSpec) => {
    const key = s.name.split('.').pop()!;
    const l = labelOf(s.name);
    // A group's fields (session persistence's type) are named within their group's legend.
    return !owner || s.name.includes('.') || plain.includes(key) || !SHARED.has(key) ? l : `${owner} ${l.charAt(0).toLowerCase()}${l.slice(1)}`;
  };
}

const LABELS: Record<Section | 'member', (s: FieldSpec) => string> = {
  loadbalancer: labelIn(''),
  listener: labelIn('Listener', ['protocol', 'protocol_port']),
  pool: labelIn('Pool'),
  healthmonitor: labelIn('Monitor'),
  member: labelIn('Member'),
};

/** Suggestions the user sees and may change: a listener on HTTP port 80, a named pool (the graph names pools), a monitor every 5 s. */
const PRESETS: Record<Section, Inputs> = {
  loadbalancer: {},
  listener: { protocol: 'HTTP', protocol_port: '80' },
  pool: { name: 'default-pool' },
  healthmonitor: { delay: '5', timeout: '5', max_retries: '3' },
};

/** Where an API message may belong: a section's field, and the value it sent. */
interface Candidate {
  section: string;
  name: string;
  sent: unknown;
}

/** The fields an API message names: those whose sent value it quotes, else the first of that name. */
function placeError(candidates: Candidate[], field: string | null, message: string): Candidate[] {
  const named = candidates.filter((c) => c.name.split('.').pop() === field);
  const quoted = /Value: '(.*?)'\. /.exec(message)?.[1];
  const same = quoted === undefined ? [] : named.filter((c) => c.sent !== undefined && String(c.sent) === quoted);
  return same.length ? same : named.slice(0, 1);
}

export function CreateLoadBalancer() {
  const lbSpecs = formFields('loadbalancer', 'create', isAdmin.value);
  const [inputs, setInputs] = useState<Record<Section, Inputs>>(() => {
    const pool = { ...PRESETS.pool, protocol: fitting(poolProtocolsFor(PRESETS.listener.protocol as string), '', PRESETS.listener.protocol as string) };
    return {
      loadbalancer: inputsOf(lbSpecs, null),
      listener: inputsOf(SPECS.listener, null, PRESETS.listener),
      pool: inputsOf(SPECS.pool, null, pool),
      healthmonitor: inputsOf(SPECS.healthmonitor, null, { ...PRESETS.healthmonitor, type: fitting(monitorTypesFor(pool.protocol), '', pool.protocol) }),
    };
  });
  const [members, setMembers] = useState<Inputs[]>(() => [inputsOf(MEMBER_SPECS, null)]);
  const [on, setOn] = useState({ listener: true, pool: true, healthmonitor: true });
  const [errors, setErrors] = useState<Record<string, Record<string, string>>>({});
  const [top, setTop] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const form = useRef<HTMLFormElement>(null);
  const [refusals, setRefusals] = useState(0);
  useRevealError(form, refusals);
  const sources = [...lbSpecs, ...SPECS.listener, ...SPECS.pool].map((s) => sourceOf(s.name)).filter((s): s is Source => s !== null);
  const choices = useChoices(sources, null);

  const listenerProtocol = on.listener ? (inputs.listener.protocol as string) : null;
  const poolProtocols = poolProtocolsFor(listenerProtocol);
  const poolOn = on.pool && poolProtocols.length > 0;
  const monitorTypes = monitorTypesFor(inputs.pool.protocol as string);
  const specsOf = (section: Section): FieldSpec[] => {
    const specs = section === 'loadbalancer' ? lbSpecs : SPECS[section];
    const value = (n: string) => inputs[section][n];
    return specs
      .filter((s) => applies(section as Kind, s.name, value))
      .map((s) => (section === 'pool' && s.name === 'protocol' ? narrowed(s, poolProtocols) : section === 'healthmonitor' && s.name === 'type' ? narrowed(s, monitorTypes) : s));
  };

  /** A protocol change carries over to what depends on it: the pool's protocol follows the listener's, the monitor's type the pool's. */
  const onInput = (section: Section) => (name: string, v: Input) =>
    setInputs((all) => {
      const next = { ...all, [section]: { ...all[section], [name]: v } };
      if (section === 'listener' && name === 'protocol') {
        const protocol = fitting(poolProtocolsFor(v as string), next.pool.protocol as string, v as string);
        next.pool = { ...next.pool, protocol };
      }
      if ((section === 'listener' && name === 'protocol') || (section === 'pool' && name === 'protocol')) {
        const protocol = next.pool.protocol as string;
        next.healthmonitor = { ...next.healthmonitor, type: fitting(monitorTypesFor(protocol), next.healthmonitor.type as string, protocol) };
      }
      return next;
    });
  const onToggle = (section: keyof typeof on) => (e: Event) => {
    const checked = (e.target as HTMLInputElement).checked;
    setOn((o) => ({ ...o, [section]: checked }));
    // Without a listener every pool protocol is possible: keep the pool's; with one, fit it again.
    if (section === 'listener' && checked) onInput('listener')('protocol', inputs.listener.protocol!);
  };

  const submit = async (e: Event) => {
    e.preventDefault();
    if (busy) return;
    const candidates: Candidate[] = [];
    const part = (section: string, specs: FieldSpec[], values: Inputs): Body => {
      const body = createBody(specs, values);
      for (const s of specs) for (const name of s.fields ? s.fields.map((f) => f.name) : [s.name]) candidates.push({ section, name, sent: s.fields ? (body[s.name] as Body | undefined)?.[name.split('.').pop()!] : body[s.name] });
      return body;
    };
    const fail = (field: string | null, message: string) => {
      const at = placeError(candidates, field, message);
      const next: Record<string, Record<string, string>> = {};
      for (const c of at) next[c.section] = { ...next[c.section], [c.name]: message };
      setErrors(next);
      setTop(at.length ? null : message);
      setRefusals((n) => n + 1);
    };
    let body: Body;
    try {
      body = part('loadbalancer', specsOf('loadbalancer'), inputs.loadbalancer);
      let pool: Body | null = null;
      if (poolOn) {
        pool = part('pool', specsOf('pool'), inputs.pool);
        const rows = members.map((m, i) => part(`member${i}`, MEMBER_SPECS, m)).filter((m) => Object.keys(m).length);
        if (rows.length) pool.members = rows;
        if (on.healthmonitor) pool.healthmonitor = part('healthmonitor', specsOf('healthmonitor'), inputs.healthmonitor);
      }
      if (on.listener) {
        const listener = part('listener', specsOf('listener'), inputs.listener);
        body.listeners = [pool ? { ...listener, default_pool: pool } : listener];
      } else if (pool) body.pools = [pool];
    } catch (err) {
      if (err instanceof InputError) return fail(err.field.split('.').pop()!, err.message);
      throw err;
    }
    setBusy(true);
    setErrors({});
    setTop(null);
    try {
      const res = await call<{ loadbalancer: { id: string } }>('POST', lbaas('loadbalancers'), { body: { loadbalancer: body } });
      navigate(`/loadbalancers/${res.loadbalancer.id}`);
    } catch (err) {
      setBusy(false);
      if (err instanceof ApiError) fail(err.field, err.message);
      else fail(null, String(err));
    }
  };

  const fields = (section: Section, more: string) => (
    <SchemaFields
      specs={specsOf(section)}
      common={FIRST[section]}
      moreLabel={more}
      idPrefix={`create-${section}`}
      inputs={inputs[section]}
      onInput={onInput(section)}
      errors={errors[section] ?? {}}
      choices={choices}
      label={LABELS[section]}
      defaults={DEFAULTS[section]}
    />
  );
  const toggle = (section: keyof typeof on, label: string, disabled = false) => (
    <legend>
      <label class="toggle">
        <input type="checkbox" checked={on[section] && !disabled} disabled={disabled} onChange={onToggle(section)} />
        {label}
      </label>
    </legend>
  );

  return (
    <section>
      <div class="heading">
        <h1>Create load balancer</h1>
      </div>
      <p class="muted">One request creates the load balancer with its listener, pool, members and health monitor; if the API refuses any part, nothing is created.</p>
      <form ref={form} class="create-form" onSubmit={submit} noValidate aria-label="Create load balancer">
        <Notice>{top}</Notice>
        <fieldset>
          <legend>Load balancer</legend>
          {fields('loadbalancer', 'More load balancer settings')}
        </fieldset>
        <fieldset>
          {toggle('listener', 'Listener')}
          {on.listener ? fields('listener', 'More listener settings') : <p class="muted">No listener: the load balancer accepts no traffic until one is added.</p>}
        </fieldset>
        <fieldset>
          {toggle('pool', 'Pool', poolProtocols.length === 0)}
          {poolProtocols.length === 0 ? (
            <p class="muted">A {listenerProtocol} listener forwards to no pool.</p>
          ) : poolOn ? (
            fields('pool', 'More pool settings')
          ) : (
            <p class="muted">No pool.</p>
          )}
        </fieldset>
        {poolOn ? (
          <>
            <fieldset>
              <legend>Members</legend>
              {members.map((m, i) => (
                <div class="member-row" key={i} role="group" aria-label={`Member ${i + 1}`}>
                  {MEMBER_SPECS.map((s) => (
                    <SchemaInput
                      key={s.name}
                      spec={s}
                      idPrefix={`create-member${i}`}
                      inputs={m}
                      onInput={(n, v) => setMembers((rows) => rows.map((r, j) => (j === i ? { ...r, [n]: v } : r)))}
                      errors={errors[`member${i}`] ?? {}}
                      choices={choices}
                      label={LABELS.member}
                      defaults={DEFAULTS.member}
                    />
                  ))}
                  <button type="button" class="secondary" aria-label={`Remove member ${i + 1}`} onClick={() => setMembers((rows) => rows.filter((_, j) => j !== i))}>
                    Remove
                  </button>
                </div>
              ))}
              <button type="button" class="secondary" onClick={() => setMembers((rows) => [...rows, inputsOf(MEMBER_SPECS, null)])}>
                Add member
              </button>
            </fieldset>
            <fieldset>
              {toggle('healthmonitor', 'Health monitor')}
              {on.healthmonitor ? fields('healthmonitor', 'More monitor settings') : <p class="muted">No monitor: members are not checked (operating status NO_MONITOR).</p>}
            </fieldset>
          </>
        ) : null}
        <div class="actions form-actions">
          {can('loadbalancer', 'post') ? null : <Notice kind="warning">Your roles in this project do not allow you to create load balancers: the API will refuse it.</Notice>}
          <button type="submit" disabled={busy} class={can('loadbalancer', 'post') ? '' : 'secondary'}>
            {busy ? 'Creating…' : can('loadbalancer', 'post') ? 'Create load balancer' : 'Submit anyway'}
          </button>
          <a class="button secondary" href={href('/loadbalancers')}>
            Cancel
          </a>
        </div>
      </form>
    </section>
  );
}
