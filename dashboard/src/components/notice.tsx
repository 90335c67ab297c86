/** A message box: an API error in the API's own words, or a confirmation. */
import type { ComponentChildren } from 'preact';

export function Notice({ kind = 'error', children }: { kind?: 'error' | 'info' | 'warning'; children: ComponentChildren }) {
  if (children === null || children === undefined || children === '') return null;
  return (
    <div class={`notice notice-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </div>
  );
}
