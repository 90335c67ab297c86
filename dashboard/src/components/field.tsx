/** A labelled form field with the API's message about it shown right beside it. */
import type { ComponentChildren } from 'preact';

/** `inline`: the control sits inside its label, before the text (a checkbox). */
export function Field({ id, label, error, hint, inline = false, children }: { id: string; label: string; error?: string | null; hint?: string; inline?: boolean; children: ComponentChildren }) {
  return (
    <div class={`field${inline ? ' field-check' : ''}${error ? ' field-error' : ''}`}>
      {inline ? (
        <label for={id}>
          {children}
          {label}
        </label>
      ) : (
        <>
          <label for={id}>{label}</label>
          {children}
        </>
      )}
      {hint && !error ? <small class="hint">{hint}</small> : null}
      {error ? (
        <small class="field-message" id={`${id}-error`} role="alert">
          {error}
        </small>
      ) : null}
    </div>
  );
}
