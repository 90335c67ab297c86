/**
 * Create or edit one object of any resource type, with the fields of the API's own request
 * schema (create: the create body's, edit: the update body's). Create sends what the user
 * filled, edit only what the user changed; one request per submit, the API's refusal shown
 * beside the field it names, or above the form.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call, get } from '../api.js';
import { href, navigate, route } from '../router.js';
import { can, isAdmin } from '../session.js';
import { KINDS, isKind, resourceUrl, type Kind } from '../resources.js';
import { Notice } from '../components/notice.js';
import { SchemaFields, useRevealError } from '../components/schema-form.js';
import { useChoices, sourceOf, type Source } from '../choices.js';
import { createBody, InputError, inputsOf, specNamed, updateBody, type Body, type FieldSpec, type Input, type Inputs, type Mode } from '../schema-fields.js';
import { COMMON, DEFAULTS, PARENT_FIELDS, SCHEMAS, applies, fitting, formFields, monitorTypesFor, narrowed, poolProtocolsFor } from '../resource-fields.js';

/** Where the object sits: its load balancer (where the form returns to) and the parents whose protocol narrows its choices. */
interface Context {
  loadbalancerId: string | null;
  listener?: Body;
  pool?: Body;
}

async function fetchOne(kind: Kind, id: string, parentId: string | null = null): Promise<Body> {
  return (await get<Record<string, Body>>(resourceUrl(kind, parentId, id)))[KINDS[kind].root]!;
}

const firstId = (list: unknown) => (list as Array<{ id: string }> | undefined)?.[0]?.id ?? null;

async function contextOf(kind: Kind, q: URLSearchParams, object: Body | null): Promise<Context> {
  const given = q.get('loadbalancer_id');
  switch (kind) {
    case 'loadbalancer':
      return { loadbalancerId: (object?.id as string | undefined) ?? null };
    case 'listener':
      return { loadbalancerId: firstId(object?.loadbalancers) ?? given };
    case 'pool': {
      const listenerId = object ? null : q.get('listener_id');
      const listener = listenerId ? await fetchOne('listener', listenerId) : undefined;
      return { loadbalancerId: firstId(object?.loadbalancers) ?? given ?? firstId(listener?.loadbalancers), listener };
    }
    case 'member':
    case 'healthmonitor': {
      const poolId = q.get('pool_id') ?? firstId(object?.pools);
      const pool = poolId ? await fetchOne('pool', poolId) : undefined;
      return { loadbalancerId: firstId(pool?.loadbalancers) ?? given, pool };
    }
    case 'l7policy':
    case 'l7rule': {
      const policyId = q.get('l7policy_id');
      const policy = kind === 'l7rule' && policyId ? await fetchOne('l7policy', policyId) : object;
      const listenerId = (policy?.listener_id as string | undefined) ?? q.get('listener_id');
      const listener = listenerId ? await fetchOne('listener', listenerId) : undefined;
      return { loadbalancerId: firstId(listener?.loadbalancers) ?? given, listener };
    }
  }
}

export function NewResource({ params }: { params: Record<string, string> }) {
  return <ResourcePage kindName={params.kind!} id={null} />;
}

export function EditResource({ params }: { params: Record<string, string> }) {
  return <ResourcePage kindName={params.kind!} id={params.id!} />;
}

function ResourcePage({ kindName, id }: { kindName: string; id: string | null }) {
  const q = route.value.query;
  if (!isKind(kindName)) {
    return (
      <section>
        <h1>Not found</h1>
        <Notice>There is no resource type {kindName}: one of {Object.keys(KINDS).join(', ')}.</Notice>
      </section>
    );
  }
  return <Loader key={`${kindName}/${id}?${q.toString()}`} kind={kindName} id={id} q={q} />;
}

function Loader({ kind, id, q }: { kind: Kind; id: string | null; q: URLSearchParams }) {
  const info = KINDS[kind];
  const parentId = info.parent ? q.get(info.parent) : null;
  const [state, setState] = useState<{ object: Body | null; context: Context } | { error: string } | null>(null);
  useEffect(() => {
    if (info.parent && !parentId) {
      setState({ error: `A ${info.label.toLowerCase()} belongs to a ${info.parent === 'pool_id' ? 'pool' : 'L7 policy'}: open this form from its page (the address names no ${info.parent}).` });
      return;
    }
    (async () => {
      const object = id ? await fetchOne(kind, id, parentId) : null;
      setState({ object, context: await contextOf(kind, q, object) });
    })().catch((e: Error) => setState({ error: e instanceof ApiError ? e.message : String(e) }));
  }, []);
  const verb = id ? 'Edit' : 'Create';
  const title = `${verb} ${info.label.toLowerCase()}`;
  if (!state || 'error' in state) {
    return (
      <section>
        <h1>{title}</h1>
        {state ? <Notice>{state.error}</Notice> : <p class="muted">Loading…</p>}
      </section>
    );
  }
  return <ResourceForm kind={kind} id={id} parentId={parentId} q={q} object={state.object} context={state.context} title={title} />;
}

function ResourceForm({ kind, id, parentId, q, object, context, title }: { kind: Kind; id: string | null; parentId: string | null; q: URLSearchParams; object: Body | null; context: Context; title: string }) {
  const info = KINDS[kind];
  const mode: Mode = id ? 'update' : 'create';
  const specs = narrowChoices(kind, mode, formFields(kind, mode, isAdmin.value), context);
  const [initial] = useState<Inputs>(() => inputsOf(specs, object, presetsOf(kind, mode, specs, context)));
  const [inputs, setInputs] = useState<Inputs>(initial);
  const [errors, setErrors] = useState<Record<string, string>>({});
  const [top, setTop] = useState<{ kind: 'error' | 'info'; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const form = useRef<HTMLFormElement>(null);
  const [refusals, setRefusals] = useState(0);
  useRevealError(form, refusals);
  const sources = specs.map((s) => sourceOf(s.name)).filter((s): s is Source => s !== null);
  const choices = useChoices(sources, context.loadbalancerId);
  const value = (n: string) => (n in inputs ? inputs[n] : object?.[n]);
  const shown = specs.filter((s) => applies(kind, s.name, value));
  const allowed = can(info.policy, mode === 'create' ? 'post' : 'put', (object?.project_id as string | undefined) ?? undefined);
  const back = context.loadbalancerId ? `/loadbalancers/${context.loadbalancerId}` : '/loadbalancers';
  const name = object ? String(object.name || object.id) : '';

  const onInput = (n: string, v: Input) => setInputs((s) => ({ ...s, [n]: v }));
  const fail = (field: string | null, message: string) => {
    const spec = specNamed(shown, field);
    setErrors(spec ? { [spec.name]: message } : {});
    setTop(spec ? null : { kind: 'error', text: message });
    setRefusals((n) => n + 1);
  };
  const submit = async (e: Event) => {
    e.preventDefault();
    if (busy) return;
    let body: Body;
    try {
      body = mode === 'create' ? { ...parentsOf(kind, q), ...createBody(shown, inputs) } : updateBody(shown, initial, inputs);
    } catch (err) {
      if (err instanceof InputError) return fail(err.field.split('.').pop()!, err.message);
      throw err;
    }
    if (mode === 'update' && !Object.keys(body).length) {
      setErrors({});
      setTop({ kind: 'info', text: 'Nothing to save: no field was changed.' });
      return;
    }
    setBusy(true);
    setErrors({});
    setTop(null);
    try {
      const res = await call<Record<string, Body>>(mode === 'create' ? 'POST' : 'PUT', resourceUrl(kind, parentId, id ?? undefined), { body: { [info.root]: body } });
      navigate(kind === 'loadbalancer' ? `/loadbalancers/${String(res[info.root]!.id)}` : back);
    } catch (err) {
      setBusy(false);
      if (err instanceof ApiError) fail(err.field, err.message);
      else fail(null, String(err));
    }
  };

  return (
    <section>
      <div class="heading">
        <h1>
          {title}
          {name ? <span class="muted"> {name}</span> : null}
        </h1>
      </div>
      <form ref={form} class="card resource-form" onSubmit={submit} noValidate aria-label={title}>
        <Notice kind={top?.kind ?? 'error'}>{top?.text}</Notice>
        <SchemaFields specs={shown} common={COMMON[kind]} idPrefix={kind} inputs={inputs} onInput={onInput} errors={errors} choices={choices} defaults={DEFAULTS[kind]} />
        <div class="actions form-actions">
          {allowed ? null : (
            <Notice kind="warning">
              Your roles in this project do not allow you to {mode === 'create' ? 'create' : 'change'} {mode === 'create' ? `a ${info.label.toLowerCase()}` : `this ${info.label.toLowerCase()}`}: the API will refuse it.
            </Notice>
          )}
          <button type="submit" disabled={busy} class={allowed ? '' : 'secondary'}>
            {busy ? 'Saving…' : !allowed ? 'Submit anyway' : mode === 'create' ? `Create ${info.label.toLowerCase()}` : 'Save changes'}
          </button>
          <a class="button secondary" href={href(back)}>
            Cancel
          </a>
        </div>
      </form>
    </section>
  );
}

/** The parent references the create schema takes, from the page's query. */
function parentsOf(kind: Kind, q: URLSearchParams): Body {
  const props = (SCHEMAS[kind].create.properties ?? {}) as Record<string, unknown>;
  return Object.fromEntries(PARENT_FIELDS.filter((f) => f in props && q.get(f)).map((f) => [f, q.get(f)]));
}

/** A new pool offers only protocols its listener may forward to; a new monitor only types its pool admits. */
function narrowChoices(kind: Kind, mode: Mode, specs: FieldSpec[], context: Context): FieldSpec[] {
  if (mode !== 'create') return specs;
  return specs.map((s) => {
    if (kind === 'pool' && s.name === 'protocol' && context.listener) return narrowed(s, poolProtocolsFor(String(context.listener.protocol)));
    if (kind === 'healthmonitor' && s.name === 'type' && context.pool) return narrowed(s, monitorTypesFor(String(context.pool.protocol)));
    return s;
  });
}

/** A new pool starts at its listener's protocol, a new monitor at its pool's, where they may. */
function presetsOf(kind: Kind, mode: Mode, specs: FieldSpec[], context: Context): Inputs {
  const parent = kind === 'pool' ? context.listener : kind === 'healthmonitor' ? context.pool : undefined;
  const field = kind === 'pool' ? 'protocol' : 'type';
  const spec = specs.find((s) => s.name === field);
  if (mode !== 'create' || !parent || !spec) return {};
  return { [field]: fitting(spec.values!.map(String), '', String(parent.protocol)) };
}
