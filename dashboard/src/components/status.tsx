/** A provisioning or operating status as a coloured badge; the colour is a class per status (styles.css), the text is the status itself. */

/** The `status-*` class of a status: every PENDING_* is one colour. */
export function statusClass(value: string | null | undefined): string {
  const v = value ?? 'UNKNOWN';
  return `status-${v.startsWith('PENDING') ? 'pending' : v.toLowerCase().replace(/_/g, '-')}`;
}

export function Status({ value }: { value: string | null | undefined }) {
  return <span class={`status ${statusClass(value)}`}>{value ?? 'UNKNOWN'}</span>;
}
