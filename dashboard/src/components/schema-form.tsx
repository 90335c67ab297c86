/**
 * Inputs for fields derived from the API's schemas (schema-fields.ts): a select for a choice,
 * a checkbox for a flag, a bounded number input, a text input, a textarea for lists (one a
 * line) and headers (name=value a line), and a select of the API's objects for a reference,
 * with "Other…" to type one the list does not hold.
 */
import { useEffect, useState } from 'preact/hooks';
import type { RefObject } from 'preact';
import { Field } from './field.js';
import { enumText, labelOf, type FieldSpec, type Input, type Inputs } from '../schema-fields.js';
import { sourceOf, type ChoiceList, type Choices, type Source } from '../choices.js';

const OTHER = '\u0000other';
/** References the API chooses itself when none is given. */
const DEFAULTED = new Set<Source>(['providers', 'flavors', 'availability_zones']);

/** A select of the API's objects; "Other…" opens a text input for a value it does not list. */
export function RefSelect({ id, label, value, list, onChange, emptyLabel, invalid }: { id: string; label: string; value: string; list: ChoiceList | undefined; onChange: (v: string) => void; emptyLabel: string; invalid?: boolean }) {
  const options = list?.options ?? [];
  const known = value === '' || options.some((o) => o.value === value);
  // Typing starts open when the value is not one listed (once the list is read) or the list could not be read.
  const [typing, setTyping] = useState(false);
  const typed = typing || (!known && list !== undefined) || list?.error !== undefined;
  const groups = [...new Set(options.map((o) => o.group ?? ''))];
  return (
    <>
      {list?.error === undefined ? (
        <select id={id} value={typed ? OTHER : value} aria-invalid={invalid} onChange={(e) => {
          const v = (e.target as HTMLSelectElement).value;
          setTyping(v === OTHER);
          if (v !== OTHER) onChange(v);
        }}>
          <option value="">{list === undefined ? 'Loading…' : emptyLabel}</option>
          {!known && list === undefined ? <option value={value}>{value}</option> : null}
          {groups.map((g) => {
            const items = options.filter((o) => (o.group ?? '') === g).map((o) => (
              <option key={o.value} value={o.value}>
                {o.label}
              </option>
            ));
            return g ? (
              <optgroup key={g} label={g}>
                {items}
              </optgroup>
            ) : (
              items
            );
          })}
          <option value={OTHER}>Other (type it)…</option>
        </select>
      ) : null}
      {typed ? (
        <input id={list?.error === undefined ? `${id}-typed` : id} aria-label={`${label} (typed)`} value={value} aria-invalid={invalid} onInput={(e) => onChange((e.target as HTMLInputElement).value)} />
      ) : null}
      {list?.error !== undefined ? <small class="hint">The list could not be read ({list.error}); type the value.</small> : null}
    </>
  );
}

/** A list of references, one select each, with rows added and removed. */
function RefList({ id, label, value, list, onChange }: { id: string; label: string; value: string; list: ChoiceList | undefined; onChange: (v: string) => void }) {
  const [rows, setRows] = useState(() => (value === '' ? [] : value.split('\n')));
  const set = (next: string[]) => {
    setRows(next);
    onChange(next.join('\n'));
  };
  return (
    <div class="ref-list" id={id} role="group" aria-label={label}>
      {rows.map((r, i) => (
        <div class="ref-row" key={i}>
          <RefSelect id={`${id}-${i}`} label={`${label} ${i + 1}`} value={r} list={list} emptyLabel="— choose —" onChange={(v) => set(rows.map((x, j) => (j === i ? v : x)))} />
          <button type="button" class="secondary" aria-label={`Remove ${label} ${i + 1}`} onClick={() => set(rows.filter((_, j) => j !== i))}>
            Remove
          </button>
        </div>
      ))}
      <button type="button" class="secondary" aria-label={`Add to ${label}`} onClick={() => set([...rows, ''])}>
        Add
      </button>
    </div>
  );
}

function placeholderOf(v: unknown): string | undefined {
  if (v === undefined || v === null) return undefined;
  return `default: ${Array.isArray(v) ? v.join(', ') : String(v)}`;
}

export interface InputProps {
  spec: FieldSpec;
  idPrefix: string;
  inputs: Inputs;
  onInput: (name: string, value: Input) => void;
  errors: Readonly<Record<string, string>>;
  choices: Choices;
  label?: (spec: FieldSpec) => string;
  defaults?: Readonly<Record<string, unknown>>;
}

/** One field: its control, its label, the API's default as a placeholder and the API's message about it. */
export function SchemaInput({ spec, idPrefix, inputs, onInput, errors, choices, label = (s) => labelOf(s.name), defaults = {} }: InputProps) {
  const id = `${idPrefix}-${spec.name.replace(/\./g, '-')}`;
  const text = label(spec);
  const error = errors[spec.name] ?? null;
  const value = inputs[spec.name];
  const key = spec.name.split('.').pop()!;
  const aria = { 'aria-invalid': error ? true : undefined, 'aria-describedby': error ? `${id}-error` : undefined };
  const set = (v: Input) => onInput(spec.name, v);
  const onText = (e: Event) => set((e.target as HTMLInputElement).value);
  if (spec.kind === 'group') {
    return (
      <fieldset class="group">
        <legend>{text}</legend>
        <div class="form-grid">
          {spec.fields!.map((f) => (
            <SchemaInput key={f.name} spec={f} idPrefix={idPrefix} inputs={inputs} onInput={onInput} errors={errors} choices={choices} label={label} defaults={defaults} />
          ))}
        </div>
      </fieldset>
    );
  }
  if (spec.kind === 'boolean') {
    return (
      <Field id={id} label={text} error={error} inline>
        <input id={id} type="checkbox" checked={value === true} onChange={(e) => set((e.target as HTMLInputElement).checked)} {...aria} />
      </Field>
    );
  }
  const source = sourceOf(key);
  const placeholder = placeholderOf(defaults[key]);
  const str = typeof value === 'string' ? value : '';
  let control;
  let hint: string | undefined;
  if (source && spec.kind === 'lines') control = <RefList id={id} label={text} value={str} list={choices[source]} onChange={set} />;
  else if (source) control = <RefSelect id={id} label={text} value={str} list={choices[source]} onChange={set} emptyLabel={spec.required ? '— choose —' : placeholder ?? (DEFAULTED.has(source) ? '— default —' : '— none —')} invalid={!!error} />;
  else if (spec.kind === 'enum') {
    control = (
      <select id={id} value={str} onChange={onText} {...aria}>
        {spec.required ? null : <option value="">{placeholder ?? '—'}</option>}
        {spec.values!.map((v) => (
          <option key={String(v)} value={enumText(spec, v)}>
            {enumText(spec, v)}
          </option>
        ))}
      </select>
    );
  } else if (spec.kind === 'number') {
    control = <input id={id} type="number" step={spec.integer ? 1 : 'any'} min={spec.min} max={spec.max} value={str} placeholder={placeholder} onInput={onText} {...aria} />;
  } else if (spec.kind === 'lines' || spec.kind === 'map') {
    hint = spec.kind === 'lines' ? 'One a line' : 'One name=value a line';
    control = <textarea id={id} rows={3} value={str} placeholder={placeholder} onInput={onText} {...aria} />;
  } else {
    control = <input id={id} maxLength={spec.maxLength} value={str} placeholder={placeholder} onInput={onText} {...aria} />;
  }
  return (
    <Field id={id} label={text} error={error} hint={hint}>
      {control}
    </Field>
  );
}

/** Fields in two parts: `common` first, then the others under a "More settings" disclosure, opened when the API's message is about one of them. */
export function SchemaFields(props: Omit<InputProps, 'spec'> & { specs: FieldSpec[]; common: readonly string[]; moreLabel?: string }) {
  const { specs, common, moreLabel = 'More settings', ...rest } = props;
  const first = common.map((n) => specs.find((s) => s.name === n)).filter((s): s is FieldSpec => !!s);
  const more = specs.filter((s) => !common.includes(s.name));
  const erred = more.some((s) => [s.name, ...(s.fields ?? []).map((f) => f.name)].some((n) => rest.errors[n]));
  const render = (s: FieldSpec) => <SchemaInput key={s.name} spec={s} {...rest} />;
  return (
    <>
      <div class="form-grid">{first.map(render)}</div>
      {more.length ? (
        <details open={erred || undefined}>
          <summary>{moreLabel}</summary>
          <div class="form-grid">{more.map(render)}</div>
        </details>
      ) : null}
    </>
  );
}

/** After a refused submit: bring the first message into view, focusing its field. `version` changes with each refusal. */
export function useRevealError(form: RefObject<HTMLFormElement | null>, version: number): void {
  useEffect(() => {
    const el = version ? form.current?.querySelector<HTMLElement>('.field-error, .notice-error') : null;
    if (!el) return;
    el.scrollIntoView({ block: 'center' });
    el.querySelector<HTMLElement>('input, select, textarea')?.focus({ preventScroll: true });
  }, [version]);
}
