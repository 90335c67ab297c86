/** A sortable table: each header is a button (keyboard: Tab, Enter), sorting by the column's value. */
import type { ComponentChildren } from 'preact';
import { useMemo, useState } from 'preact/hooks';

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
            sorted.map((r) => (
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
    </div>
  );
}
