/** The filters of a list page: a search box and selects whose values live in the URL's query, so a filtered view can be linked to. */
import { route, setQuery } from '../router.js';

export function FilterSearch({ placeholder, name = 'q' }: { placeholder: string; name?: string }) {
  return (
    <label class="grow">
      <span>Search</span>
      <input type="search" placeholder={placeholder} value={route.value.query.get(name) ?? ''} onInput={(e) => setQuery({ [name]: (e.target as HTMLInputElement).value })} />
    </label>
  );
}

/** A select whose empty choice (`any`) filters nothing; an option is a value, or a value and its words. */
export function FilterSelect({ name, label, options, any = 'any' }: { name: string; label: string; options: ReadonlyArray<string | readonly [value: string, words: string]>; any?: string }) {
  return (
    <label>
      <span>{label}</span>
      <select value={route.value.query.get(name) ?? ''} onChange={(e) => setQuery({ [name]: (e.target as HTMLSelectElement).value })}>
        <option value="">{any}</option>
        {options.map((o) => {
          const [value, words] = typeof o === 'string' ? [o, o] : o;
          return (
            <option key={value} value={value}>
              {words}
            </option>
          );
        })}
      </select>
    </label>
  );
}

/** Whether a row matches the search box's text: every row while it is empty, else those with a value containing it (any case). */
export function matchesSearch(search: string, values: ReadonlyArray<string | null | undefined>): boolean {
  const needle = search.trim().toLowerCase();
  return !needle || values.some((v) => v?.toLowerCase().includes(needle));
}
