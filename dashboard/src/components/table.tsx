/**
 * A sortable table: each header is a button (keyboard: Tab, Enter), sorting by the column's value.
 * It draws the first PAGE_ROWS rows of the sorted whole and more on request: a list of thousands is
 * sorted and filtered in memory in milliseconds, but drawing every row would take the browser seconds.
 */
import type { ComponentChildren } from 'preact';
import { useMemo, useState } from 'preact/hooks';

export const PAGE_ROWS = 100;

export interface Column<T> {
  key: string;
  label: string;
  render: (row: T) => ComponentChildren;
  /** The value sorted by; without it the column does not sort. */
  sort?: (row: T) => string | number;
  /** Hidden on a narrow screen. */
  wide?: boolean;
}

export function Table<T>({ columns, rows, rowKey, empty, initialSort, caption }: { columns: Column<T>[]; rows: T[]; rowKey: (row: T) => string; empty: string; initialSort?: { key: string; desc?: boolean }; caption?: string }) {
  const [sort, setSort] = useState<{ key: string; desc: boolean }>({ key: initialSort?.key ?? '', desc: initialSort?.desc ?? false });
  const [shown, setShown] = useState(PAGE_ROWS);
  const sorted = useMemo(() => {
    const col = columns.find((c) => c.key === sort.key);
    if (!col?.sort) return rows;
    const by = col.sort;
    const out = [...rows].sort((a, b) => {
      const x = by(a);
      const y = by(b);
      return typeof x === 'number' && typeof y === 'number' ? x - y : String(x).localeCompare(String(y));
    });
    return sort.desc ? out.reverse() : out;
  }, [rows, sort, columns]);
  return (
    <div class="table-wrap">
      <table>
        {caption ? <caption>{caption}</caption> : null}
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.key} class={c.wide ? 'wide' : ''} aria-sort={sort.key === c.key ? (sort.desc ? 'descending' : 'ascending') : undefined}>
                {c.sort ? (
                  <button type="button" class="sort" onClick={() => setSort((s) => ({ key: c.key, desc: s.key === c.key ? !s.desc : false }))}>
                    {c.label}
                    <span aria-hidden="true">{sort.key === c.key ? (sort.desc ? ' ▼' : ' ▲') : ''}</span>
                  </button>
                ) : (
                  c.label
                )}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {sorted.length === 0 ? (
            <tr>
              <td colSpan={columns.length} class="empty">
                {empty}
              </td>
            </tr>
          ) : (
            sorted.slice(0, shown).map((r) => (
              <tr key={rowKey(r)}>
                {columns.map((c) => (
                  <td key={c.key} class={c.wide ? 'wide' : ''} data-label={c.label}>
                    {c.render(r)}
                  </td>
                ))}
              </tr>
            ))
          )}
        </tbody>
      </table>
      {sorted.length > shown ? (
        <p class="more">
          <span class="muted">
            {shown} of {sorted.length} shown
          </span>{' '}
          <button type="button" class="secondary" onClick={() => setShown((n) => n + PAGE_ROWS * 5)}>
            Show {Math.min(PAGE_ROWS * 5, sorted.length - shown)} more
          </button>{' '}
          <button type="button" class="secondary" onClick={() => setShown(sorted.length)}>
            Show all
          </button>
        </p>
      ) : null}
    </div>
  );
}
