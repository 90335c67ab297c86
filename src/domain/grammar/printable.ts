/** Which characters any text HAProxy reads may hold, whatever the field. */

// C0 controls (CR, LF, TAB included), DEL and C1 controls (NEL): each ends, splits or corrupts a config line.
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f]/;
// A lone UTF-16 surrogate cannot be written as UTF-8: the file would hold U+FFFD instead.
const LONE_SURROGATE = /\p{Cs}/u;

/** Why `value` cannot appear in a config line, or null. */
export function unprintableProblem(value: string): string | null {
  if (UNPRINTABLE.test(value)) return 'contains control characters';
  if (LONE_SURROGATE.test(value)) return 'is not well-formed Unicode';
  return null;
}

export function isPrintable(value: string): boolean {
  return unprintableProblem(value) === null;
}
